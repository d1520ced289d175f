/* cairn C ABI — composite items: named trees, JSON values, bytes and user items (saved and
 * restored by C callbacks) of one step, with custom metadata per item. Part of <cairn/cairn.h>,
 * which includes every part and states the conventions of the ABI (status codes, option structs,
 * collective calls). */
#ifndef CAIRN_C_ITEMS_H
#define CAIRN_C_ITEMS_H

#include <cairn/c/tree.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- composite items */

/* Named items of a composite checkpoint: array trees, JSON values, opaque bytes and user items,
 * each stored in its own sub-directory of the step. Names are path components that do not start
 * with "__". */
typedef struct cairn_items cairn_items;

/* A new empty item set in *out. */
CAIRN_C_API cairn_status cairn_items_create(cairn_items** out);
/* Frees the set (not the trees it refers to). */
CAIRN_C_API void cairn_items_free(cairn_items* items);
/* Adds an array-tree item. The set refers to `tree` (it does not copy it), which must stay
 * alive while the set is used. For a save, the tree's leaves are saved; for a restore it is the
 * target (restored in place, like cairn_manager_restore). NULL `tree` in a restore: the item is
 * restored as saved into a tree the set owns (cairn_items_get_tree). */
CAIRN_C_API cairn_status cairn_items_add_tree(cairn_items* items, const char* name,
                                              cairn_tree* tree);
/* Adds a JSON item from its text (copied). For a restore pass NULL: the restored value is then
 * read with cairn_items_get_json. */
CAIRN_C_API cairn_status cairn_items_add_json(cairn_items* items, const char* name,
                                              const char* json_text);
/* The JSON item `name` as text in *json_text (free with cairn_free). CAIRN_ERR_NOT_FOUND
 * when there is no such item or it holds no value. */
CAIRN_C_API cairn_status cairn_items_get_json(const cairn_items* items, const char* name,
                                              char** json_text);
/* The tree of item `name` in *tree: a new handle (free it with cairn_tree_free) that shares
 * the item's buffers, which live as long as either handle. */
CAIRN_C_API cairn_status cairn_items_get_tree(const cairn_items* items, const char* name,
                                              cairn_tree** tree);

/* Adds a bytes item for a save: `size` bytes at `data` (copied; NULL only when size is 0) that
 * this rank serialized itself, stored as p<rank>.bin with a checksum (cairn::BytesHandler).
 * `replicated` nonzero: every rank passes the same bytes and the primary writes them once.
 * Not collective (the save checks that the ranks agree on the items).
 * CAIRN_ERR_INVALID_ARGUMENT for a bad or duplicate name or NULL data with a nonzero size. */
CAIRN_C_API cairn_status cairn_items_add_bytes(cairn_items* items, const char* name,
                                               const void* data, size_t size, int replicated);
/* `from_rank` of cairn_items_add_bytes_target: each rank reads the bytes it saved itself. */
#define CAIRN_BYTES_OWN_RANK (-1)
/* Adds a bytes item for a restore: per-rank bytes come back as rank `from_rank` saved them
 * (CAIRN_BYTES_OWN_RANK: the calling rank's), replicated bytes as saved; read them with
 * cairn_items_get_bytes. Not collective. CAIRN_ERR_INVALID_ARGUMENT for a bad or duplicate
 * name or a from_rank below -1. The restore returns CAIRN_ERR_NOT_FOUND, naming the rank, for
 * a rank the save did not have. */
CAIRN_C_API cairn_status cairn_items_add_bytes_target(cairn_items* items, const char* name,
                                                      int from_rank);
/* A copy of the bytes of item `name` in *data (free with cairn_free; NULL when *size is 0) and
 * their count in *size. Not collective. CAIRN_ERR_NOT_FOUND when there is no such item or it
 * holds no bytes yet; CAIRN_ERR_INVALID_ARGUMENT for an item that is not bytes. */
CAIRN_C_API cairn_status cairn_items_get_bytes(const cairn_items* items, const char* name,
                                               void** data, size_t* size);

/* The save callback of a user item: writes the calling rank's files of the item into
 * `directory`, the item's directory inside the step's temporary directory (it exists, shared by
 * every rank of the save, and is committed with the step). `rank` is the calling rank in the
 * communicator of the manager or checkpointer. Every rank calls it, on the thread that called
 * the save, before the save returns (also for an async save) and before the step is committed.
 * It must make what it writes durable itself (fsync, as cairn's own handlers do); ranks must
 * not write the same file. Returns 0 on success; nonzero fails the save on every rank. */
typedef int (*cairn_user_item_save_fn)(const char* directory, int rank, void* user_data);
/* The restore callback of a user item: reads the item from `directory`, the item's directory
 * of the committed step (what the save callbacks of every rank wrote there). Every rank calls
 * it, on the thread that called the restore. Returns 0 on success; nonzero fails the restore
 * on every rank. */
typedef int (*cairn_user_item_restore_fn)(const char* directory, int rank, void* user_data);

/* Adds a user item: an item the caller writes and reads itself through C callbacks (a handler
 * of its own, cairn::CheckpointHandler in C++). `type_name` (copied) is recorded as the item's
 * handler type in the step's cairn-step.json; a restore of the item needs the same type_name
 * (CAIRN_ERR_INVALID_ARGUMENT naming both otherwise). It must not start with "cairn." and must
 * not be a handler type a C++ part of the program registered. `save_fn` may be NULL in a set
 * used only for restores, `restore_fn` NULL in a set used only for saves (not both); a save or
 * restore that needs the missing one returns CAIRN_ERR_INVALID_ARGUMENT naming the item.
 * `user_data` is passed to both callbacks; it must stay valid while the set is used. A nonzero
 * return of a callback on any rank makes the save or restore return CAIRN_ERR_IO on every rank,
 * with a message naming the item, the type, the callback's value and the ranks; a failed save
 * commits nothing. The item's metadata (cairn_manager_item_metadata) counts its files and bytes.
 * Not collective. CAIRN_ERR_INVALID_ARGUMENT for a bad or duplicate name or a bad type_name. */
CAIRN_C_API cairn_status cairn_items_add_user(cairn_items* items, const char* name,
                                              const char* type_name,
                                              cairn_user_item_save_fn save_fn,
                                              cairn_user_item_restore_fn restore_fn,
                                              void* user_data);

/* Sets the custom metadata of item `name`, a JSON object given as text (copied), saved with the
 * item in the step's cairn-step.json (C++ Composite custom metadata) and given back by
 * cairn_items_get_metadata after a restore of the item. Replaces what was set before. Not
 * collective. CAIRN_ERR_NOT_FOUND for an item not added yet; CAIRN_ERR_INVALID_ARGUMENT for
 * text that is not a JSON object. */
CAIRN_C_API cairn_status cairn_items_set_metadata(cairn_items* items, const char* name,
                                                  const char* json_object);
/* The custom metadata of item `name` as JSON object text in *json_text (free with cairn_free):
 * after a restore, what the save stored with the item ("{}" when it stored none); before, what
 * cairn_items_set_metadata set ("{}" when nothing). Not collective. CAIRN_ERR_NOT_FOUND when
 * there is no such item. */
CAIRN_C_API cairn_status cairn_items_get_metadata(const cairn_items* items, const char* name,
                                                  char** json_text);

#ifdef __cplusplus
}
#endif

#endif /* CAIRN_C_ITEMS_H */
