/* cairn C ABI — the checkpoint manager. Part of <cairn/cairn.h>, which includes every part and
 * states the conventions of the ABI (status codes, option structs, collective calls). */
#ifndef CAIRN_C_MANAGER_H
#define CAIRN_C_MANAGER_H

#include <cairn/c/comm.h>
#include <cairn/c/items.h>
#include <cairn/c/options.h>
#include <cairn/c/tree.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- checkpoint manager */

/* A series of checkpoints under one root directory (cairn::CheckpointManager). Every
 * function below is collective over the manager's communicator unless it says otherwise. */
typedef struct cairn_manager cairn_manager;

/* The newest step, for the `step` argument of the restore functions. */
#define CAIRN_STEP_LATEST INT64_MIN

/* Opens (creates and locks, unless read-only) the root `root` over `comm`. Collective.
 * CAIRN_ERR_NOT_FOUND when the root is missing and options->create is 0;
 * CAIRN_ERR_INVALID_ARGUMENT for bad options, a root locked by another job, a root that is a
 * checkpoint, an item of one or inside either, or (unless allow_non_empty_root) a non-empty
 * directory that is not a checkpoint root. */
CAIRN_C_API cairn_status cairn_manager_create(const cairn_comm* comm, const char* root,
                                              const cairn_manager_options* options,
                                              cairn_manager** out);
/* Closes (see cairn_manager_close) and frees the manager. Collective unless it was closed. */
CAIRN_C_API cairn_status cairn_manager_free(cairn_manager* manager);

/* Saves `tree` as `step` when the save policy (or force, or preemption) says so; *saved (when
 * not NULL) says whether a save started: 0 for a step that already exists (without force) and
 * on a read-only manager. Async by default: the tree's buffers may be modified once this
 * returns (unless async_zero_copy). Collective. CAIRN_ERR_INVALID_ARGUMENT for a forced save
 * of a step that exists (delete it first to replace it). */
CAIRN_C_API cairn_status cairn_manager_save(cairn_manager* manager, int64_t step,
                                            const cairn_tree* tree,
                                            const cairn_save_options* options, int* saved);
/* As cairn_manager_save for a composite step of named items. Collective. */
CAIRN_C_API cairn_status cairn_manager_save_items(cairn_manager* manager, int64_t step,
                                                  const cairn_items* items,
                                                  const cairn_save_options* options, int* saved);

/* Restores `step` (or CAIRN_STEP_LATEST) into `target`: every array leaf of the target is
 * read into its buffer (the target's box and dtype: any number of ranks, any decomposition),
 * scalar, string and JSON leaves of the target get the saved values. Leaves not in the target
 * are not read (partial restore). Collective. CAIRN_ERR_NOT_FOUND for a missing step or leaf
 * (unless listed in optional_leaves). */
CAIRN_C_API cairn_status cairn_manager_restore(cairn_manager* manager, int64_t step,
                                               cairn_tree* target,
                                               const cairn_restore_options* options);
/* Restores `step` (or CAIRN_STEP_LATEST: the newest committed one there) of the checkpoint root
 * `directory` instead of the manager's root into `target`, as cairn_manager_restore does
 * (Orbax's restore(..., directory=)): a pretrained checkpoint kept elsewhere. Its step
 * directories are named with the manager's step name format. Changes nothing in either root.
 * Collective. CAIRN_ERR_NOT_FOUND when `directory` has no such committed step. */
CAIRN_C_API cairn_status cairn_manager_restore_from(cairn_manager* manager, const char* directory,
                                                    int64_t step, cairn_tree* target,
                                                    const cairn_restore_options* options);
/* Restores the newest committed step that restores without error into `target`, as
 * cairn_manager_restore does, trying the steps newest first: the restart of a run whose newest
 * checkpoint is damaged. A step fails when any rank finds a damaged, truncated or missing file
 * (CAIRN_ERR_FORMAT or CAIRN_ERR_NOT_FOUND); once an older step restores, each newer step that
 * failed is moved aside as `<name>.damaged-<n>` in the root (logged, shown by `cairn ls`, never
 * deleted by cairn). *step gets the step restored with *found = 1, or *found = 0 when the root
 * has no committed step. Collective. When no step restores, nothing is moved aside and the
 * newest step's error is returned; CAIRN_ERR_INVALID_ARGUMENT for a target that does not fit. */
CAIRN_C_API cairn_status cairn_manager_restore_latest_intact(cairn_manager* manager,
                                                             cairn_tree* target,
                                                             const cairn_restore_options* options,
                                                             int64_t* step, int* found);
/* Restores `step` as it was saved into a new tree in *out that owns its buffers: each rank
 * gets the boxes the rank of its number wrote, or every array whole (whole_arrays); only the
 * `select` leaves when given. Collective. */
CAIRN_C_API cairn_status cairn_manager_restore_as_saved(cairn_manager* manager, int64_t step,
                                                        const cairn_restore_options* options,
                                                        cairn_tree** out);
/* Restores the items of a composite step named in `items` (only those: partial restore): tree
 * items as cairn_manager_restore (NULL tree: as saved), JSON items are replaced by the saved
 * value. Collective. */
CAIRN_C_API cairn_status cairn_manager_restore_items(cairn_manager* manager, int64_t step,
                                                     cairn_items* items,
                                                     const cairn_restore_options* options);

/* The newest committed step in *step with *found = 1, or *found = 0. Collective. */
CAIRN_C_API cairn_status cairn_manager_latest_step(cairn_manager* manager, int64_t* step,
                                                   int* found);
/* The best committed step by best_metric; without best_metric the newest; *found = 0 when
 * there is no step, or no step has best_metric. Collective. */
CAIRN_C_API cairn_status cairn_manager_best_step(cairn_manager* manager, int64_t* step, int* found);
/* The committed steps, ascending, in *steps (free with cairn_free; NULL when *count is 0).
 * `reload` nonzero re-lists the root first. Collective. */
CAIRN_C_API cairn_status cairn_manager_all_steps(cairn_manager* manager, int reload,
                                                 int64_t** steps, size_t* count);
/* Re-reads the steps and their metadata from the root. Collective. */
CAIRN_C_API cairn_status cairn_manager_reload(cairn_manager* manager);
/* With a local level (local_dir): the steps every node holds on the local level, ascending,
 * in *steps (free with cairn_free; NULL when *count is 0); none without one. Collective. */
CAIRN_C_API cairn_status cairn_manager_local_steps(cairn_manager* manager, int64_t** steps,
                                                   size_t* count);
/* Where the last restore read from: "local" or "persistent" into `level` (at most `size`
 * bytes with the terminating NUL; "" before any restore), and how many nodes it rebuilt from
 * their copies in *rebuilt_nodes. Not collective. */
CAIRN_C_API cairn_status cairn_manager_last_restore_level(const cairn_manager* manager, char* level,
                                                          size_t size, int* rebuilt_nodes);
/* With a local level: drains the newest local step to the root now when it is newer than the
 * newest persistent step, and waits for its commit; *drained says whether it did. Collective. */
CAIRN_C_API cairn_status cairn_manager_drain(cairn_manager* manager, int* drained);
/* Whether a save of `step` would happen (*result 0 or 1). Collective. */
CAIRN_C_API cairn_status cairn_manager_should_save(cairn_manager* manager, int64_t step,
                                                   int* result);
/* Whether any rank was signalled or the end of the job is near, the same on every rank
 * (*result 0 or 1; always 0 without enable_preemption). Collective. */
CAIRN_C_API cairn_status cairn_manager_reached_preemption(cairn_manager* manager, int64_t step,
                                                          int* result);
/* Blocks until the save in flight is committed and retention ran; fails on every rank when
 * that save failed anywhere. Collective. */
CAIRN_C_API cairn_status cairn_manager_wait_until_finished(cairn_manager* manager);
/* Fails on every rank when a background save failed. Collective. */
CAIRN_C_API cairn_status cairn_manager_check_for_errors(cairn_manager* manager);
/* Whether a save is in flight on this rank. Not collective. */
CAIRN_C_API cairn_status cairn_manager_is_saving_in_progress(const cairn_manager* manager,
                                                             int* result);
/* Deletes a committed step (or moves it to todelete_subdir). Collective.
 * CAIRN_ERR_NOT_FOUND for a step that is not committed. */
CAIRN_C_API cairn_status cairn_manager_delete_step(cairn_manager* manager, int64_t step);
/* The metrics saved with `step` as JSON text ("{}" when none). Collective. */
CAIRN_C_API cairn_status cairn_manager_metrics(cairn_manager* manager, int64_t step,
                                               char** json_text);
/* The custom metadata saved with `step` ("null" when none). Collective. */
CAIRN_C_API cairn_status cairn_manager_custom_metadata(cairn_manager* manager, int64_t step,
                                                       char** json_text);
/* The whole step metadata (cairn-step.json, with the items' metadata as "item_metadata") of
 * `step` as text. Collective. */
CAIRN_C_API cairn_status cairn_manager_step_metadata(cairn_manager* manager, int64_t step,
                                                     char** json_text);
/* The root metadata (cairn-root.json) as JSON text in *json_text (free with cairn_free):
 * format, version, step_prefix, step_name_format, world_size, and the caller's metadata_json
 * as "user". When the root has no cairn-root.json: for a read_only manager the same fields built
 * from its options; for a writing one (save_root_metadata 0) "{}". Collective. CAIRN_ERR_FORMAT
 * for a damaged file. */
CAIRN_C_API cairn_status cairn_manager_root_metadata(cairn_manager* manager, char** json_text);
/* The handler's description of the items of `step` (structure, shapes, sizes). Collective. */
CAIRN_C_API cairn_status cairn_manager_item_metadata(cairn_manager* manager, int64_t step,
                                                     char** json_text);
/* The directory of `step` in *path (free with cairn_free). Not collective. */
CAIRN_C_API cairn_status cairn_manager_step_path(const cairn_manager* manager, int64_t step,
                                                 char** path);
/* Finishes the save in flight and background deletes and releases the root lock; fails on
 * every rank when the save failed. Idempotent. Collective. */
CAIRN_C_API cairn_status cairn_manager_close(cairn_manager* manager);

#ifdef __cplusplus
}
#endif

#endif /* CAIRN_C_MANAGER_H */
