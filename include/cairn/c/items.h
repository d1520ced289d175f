/* cairn C ABI — composite items: named trees and JSON values of one step. Part of <cairn/cairn.h>,
 * which includes every part and states the conventions of the ABI (status codes, option structs,
 * collective calls). */
#ifndef CAIRN_C_ITEMS_H
#define CAIRN_C_ITEMS_H

#include <cairn/c/tree.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- composite items */

/* Named items of a composite checkpoint: array trees and JSON values, each stored in its own
 * sub-directory of the step. Names are path components that do not start with "__". */
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

#ifdef __cplusplus
}
#endif

#endif /* CAIRN_C_ITEMS_H */
