/* cairn C ABI — plain checkpointers: one array tree (or a composite of named items) saved to, and
 * restored from, one checkpoint directory with the commit protocol, without a manager
 * (cairn::Checkpointer and cairn::AsyncCheckpointer with the array-tree handler; Orbax's
 * Checkpointer and AsyncCheckpointer). Part of <cairn/cairn.h>, which includes every part and
 * states the conventions of the ABI. */
#ifndef CAIRN_C_CHECKPOINTER_H
#define CAIRN_C_CHECKPOINTER_H

#include <cairn/c/comm.h>
#include <cairn/c/items.h>
#include <cairn/c/options.h>
#include <cairn/c/tree.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- plain checkpointers */

/* A checkpointer of array trees. Every function below is collective over the communicator
 * given at creation unless it says otherwise. A checkpoint it writes is an ordinary cairn
 * checkpoint (handler "cairn.array_tree"): managers and the `cairn` tool read it. */
typedef struct cairn_checkpointer cairn_checkpointer;

/* A checkpointer over `comm` in *out: synchronous (async 0: a save returns once the checkpoint
 * is committed) or asynchronous (async nonzero: a save returns once the tree's buffers may be
 * modified, and commits in the background). Collective. */
CAIRN_C_API cairn_status cairn_checkpointer_create(const cairn_comm* comm, int async,
                                                   cairn_checkpointer** out);
/* Waits for the save in flight (logging its failure) and frees the checkpointer. Collective
 * for an asynchronous one; NULL is accepted. */
CAIRN_C_API void cairn_checkpointer_free(cairn_checkpointer* checkpointer);
/* Saves `tree` as the checkpoint directory `dir`. Of `options` (NULL: defaults), force
 * replaces a committed checkpoint at `dir` (otherwise CAIRN_ERR_INVALID_ARGUMENT),
 * custom_metadata_json is stored in its cairn-step.json, format, allow_sparse and fsync apply
 * to the tree; metrics_json is not used. An asynchronous save first waits for the previous
 * one; its later failures are returned by the next call. Collective. */
CAIRN_C_API cairn_status cairn_checkpointer_save(cairn_checkpointer* checkpointer, const char* dir,
                                                 const cairn_tree* tree,
                                                 const cairn_save_options* options);
/* Restores the checkpoint `dir` into `target` (as cairn_manager_restore does), after the save in
 * flight. Collective. CAIRN_ERR_NOT_FOUND for a missing checkpoint or leaf, CAIRN_ERR_FORMAT for
 * an incomplete or damaged one. */
CAIRN_C_API cairn_status cairn_checkpointer_restore(cairn_checkpointer* checkpointer,
                                                    const char* dir, cairn_tree* target,
                                                    const cairn_restore_options* options);
/* The step metadata of the checkpoint `dir` (cairn-step.json, with the tree's description under
 * "item") as JSON text in *json_text (free with cairn_free). Collective. */
CAIRN_C_API cairn_status cairn_checkpointer_metadata(cairn_checkpointer* checkpointer,
                                                     const char* dir, char** json_text);
/* Blocks until the save in flight is committed; fails on every rank when it failed anywhere.
 * Returns at once for a synchronous checkpointer. Collective. */
CAIRN_C_API cairn_status cairn_checkpointer_wait_until_finished(cairn_checkpointer* checkpointer);
/* Whether a save is in flight on this rank (*result 0 or 1). Not collective. */
CAIRN_C_API cairn_status
cairn_checkpointer_is_saving_in_progress(const cairn_checkpointer* checkpointer, int* result);

/* A checkpointer of composites in *out: each checkpoint holds named items (trees, JSON values,
 * bytes; cairn::CompositeHandler, handler "cairn.composite"), saved with
 * cairn_checkpointer_save_items and restored with cairn_checkpointer_restore_items; `async` as
 * for cairn_checkpointer_create. cairn_checkpointer_save and _restore of one tree fail on it
 * with CAIRN_ERR_INVALID_ARGUMENT. Collective. */
CAIRN_C_API cairn_status cairn_checkpointer_create_composite(const cairn_comm* comm, int async,
                                                             cairn_checkpointer** out);
/* Saves the items of `items` as the checkpoint directory `dir`, with their custom metadata,
 * as cairn_checkpointer_save does for a tree (options: force, custom_metadata_json, and for
 * tree items format, allow_sparse and fsync). Collective. CAIRN_ERR_INVALID_ARGUMENT on a
 * checkpointer of trees, and for an item without a value to save. */
CAIRN_C_API cairn_status cairn_checkpointer_save_items(cairn_checkpointer* checkpointer,
                                                       const char* dir, const cairn_items* items,
                                                       const cairn_save_options* options);
/* Restores the items of `items` (only those) from the checkpoint `dir`, as
 * cairn_manager_restore_items does, after the save in flight. Collective. CAIRN_ERR_NOT_FOUND
 * for a missing checkpoint; CAIRN_ERR_INVALID_ARGUMENT on a checkpointer of trees. */
CAIRN_C_API cairn_status cairn_checkpointer_restore_items(cairn_checkpointer* checkpointer,
                                                          const char* dir, cairn_items* items,
                                                          const cairn_restore_options* options);

#ifdef __cplusplus
}
#endif

#endif /* CAIRN_C_CHECKPOINTER_H */
