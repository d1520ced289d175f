/* cairn C ABI — per-process (multihost) checkpoints. Part of <cairn/cairn.h>, which includes every
 * part and states the conventions of the ABI (status codes, option structs, collective calls). */
#ifndef CAIRN_C_MULTIHOST_H
#define CAIRN_C_MULTIHOST_H

#include <cairn/c/comm.h>
#include <cairn/c/tree.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- multihost checkpoints */

/* Per-process checkpoints in `<base>-<rank>` with a collective restart from the newest step
 * every process has (cairn::MultihostCheckpoint). Functions are collective over its comm. */
typedef struct cairn_multihost cairn_multihost;

/* Options of a multihost checkpoint. */
typedef struct cairn_multihost_options {
  size_t struct_size;      /* sizeof(cairn_multihost_options) as the caller knows it */
  int max_to_keep;         /* [5] checkpoints kept per process; at least 2 (CLU's default) */
  const char* step_prefix; /* ["ckpt-"] steps are <prefix><step> (CLU's ckpt-<n>) */
} cairn_multihost_options;

/* Fills *options with the defaults for a caller that knows `struct_size` bytes of it. */
CAIRN_C_API cairn_status cairn_multihost_options_init(cairn_multihost_options* options,
                                                      size_t struct_size);
/* Uses `<base>-<rank>` for this process; trailing '/' of `base` are dropped first (CLU).
 * Collective over `comm`. */
CAIRN_C_API cairn_status cairn_multihost_create(const cairn_comm* comm, const char* base,
                                                const cairn_multihost_options* options,
                                                cairn_multihost** out);
/* Frees the handle. Not collective. */
CAIRN_C_API void cairn_multihost_free(cairn_multihost* multihost);
/* Restores the newest step every process has into `state` (a target tree) and stores it in
 * *step; when there is none, saves `state` as `initial_step` and stores that. Collective. */
CAIRN_C_API cairn_status cairn_multihost_restore_or_initialize(cairn_multihost* multihost,
                                                               cairn_tree* state,
                                                               int64_t initial_step, int64_t* step);
/* Saves this process's `state` as `step` (synchronously). First each process deletes its steps
 * not older than `step` and those newer than the step last restored or saved through this
 * handle: after a restore of an older step, the save replaces the next step and deletes the
 * newer ones, as CLU's (see cairn::MultihostCheckpoint::save). Collective. */
CAIRN_C_API cairn_status cairn_multihost_save(cairn_multihost* multihost, int64_t step,
                                              const cairn_tree* state);
/* Restores `step` into `state` (each process its own boxes) when every process has it (CLU's
 * restore of a given checkpoint). Collective. CAIRN_ERR_NOT_FOUND on every rank when some
 * process lacks the step. */
CAIRN_C_API cairn_status cairn_multihost_restore(cairn_multihost* multihost, int64_t step,
                                                 cairn_tree* state);
/* The newest step every process has, or *found = 0. Collective. */
CAIRN_C_API cairn_status cairn_multihost_latest_common_step(cairn_multihost* multihost,
                                                            int64_t* step, int* found);

#ifdef __cplusplus
}
#endif

#endif /* CAIRN_C_MULTIHOST_H */
