/* cairn C ABI — composite items beyond trees and JSON: bytes items, custom metadata per item,
 * empty tree nodes, and plain checkpointers of composites. Each scenario saves, restores and
 * compares what it saved; one ctest case per scenario, at every rank count. */
#include <stdio.h>
#include <string.h>

#include "capi_test.h"

/* The bytes rank `rank` serializes itself: its own text, of a length that differs per rank. */
static void rank_payload(int rank, char* out, size_t size) {
  snprintf(out, size, "rank %d payload%.*s", rank, rank, "++++");
}

/* Checks that `items` holds the bytes `want` (a NUL-terminated text, saved without its NUL). */
static void check_bytes(const cairn_items* items, const char* name, const char* want) {
  void* data = NULL;
  size_t size = 0;
  CHECK_OK(cairn_items_get_bytes(items, name, &data, &size));
  CHECK(size == strlen(want));
  CHECK(memcmp(data, want, size) == 0);
  cairn_free(data);
}

/* Checks that item `name` of `items` holds the custom metadata `want` (as cairn writes it). */
static void check_metadata(const cairn_items* items, const char* name, const char* want) {
  char* text = NULL;
  CHECK_OK(cairn_items_get_metadata(items, name, &text));
  if (strcmp(text, want) != 0) fprintf(stderr, "metadata of %s: %s, want %s\n", name, text, want);
  CHECK(strcmp(text, want) == 0);
  cairn_free(text);
}

/* Per-rank and replicated bytes through a manager; each rank reads its own blob and its
 * neighbour's; a rank the save did not have is an error naming it. */
static void bytes(const cairn_comm* comm, int rank, int size) {
  char mine[64];
  char next[64];
  const char shared[] = "the same on every rank";
  cairn_manager_options o;
  cairn_manager* m = NULL;
  cairn_items* items = NULL;
  void* data = NULL;
  size_t count = 1;
  rank_payload(rank, mine, sizeof mine);
  rank_payload((rank + 1) % size, next, sizeof next);
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  CHECK_OK(cairn_manager_create(comm, capi_test_path("bytes"), &o, &m));
  CHECK_OK(cairn_items_create(&items));
  CHECK_OK(cairn_items_add_bytes(items, "state", mine, strlen(mine), 0));
  CHECK_OK(cairn_items_add_bytes(items, "shared", shared, strlen(shared), 1));
  CHECK_OK(cairn_items_add_bytes(items, "none", NULL, 0, 0));
  CHECK_STATUS(cairn_items_add_bytes(items, "bad", NULL, 3, 0), CAIRN_ERR_INVALID_ARGUMENT,
               "data is NULL");
  CHECK_OK(cairn_manager_save_items(m, 1, items, NULL, NULL));
  CHECK_OK(cairn_manager_wait_until_finished(m));
  cairn_items_free(items);

  CHECK_OK(cairn_items_create(&items));
  CHECK_OK(cairn_items_add_bytes_target(items, "state", CAIRN_BYTES_OWN_RANK));
  CHECK_OK(cairn_items_add_bytes_target(items, "shared", CAIRN_BYTES_OWN_RANK));
  CHECK_OK(cairn_items_add_bytes_target(items, "none", CAIRN_BYTES_OWN_RANK));
  CHECK_STATUS(cairn_items_get_bytes(items, "state", &data, &count), CAIRN_ERR_NOT_FOUND,
               "no bytes yet");
  CHECK_OK(cairn_manager_restore_items(m, 1, items, NULL));
  check_bytes(items, "state", mine);
  check_bytes(items, "shared", shared);
  CHECK_OK(cairn_items_get_bytes(items, "none", &data, &count));
  CHECK(data == NULL && count == 0);
  cairn_items_free(items);

  /* the neighbour's blob, and one of a rank the save did not have */
  CHECK_OK(cairn_items_create(&items));
  CHECK_OK(cairn_items_add_bytes_target(items, "state", (rank + 1) % size));
  CHECK_OK(cairn_manager_restore_items(m, 1, items, NULL));
  check_bytes(items, "state", next);
  cairn_items_free(items);
  CHECK_OK(cairn_items_create(&items));
  CHECK_OK(cairn_items_add_bytes_target(items, "state", size));
  CHECK_STATUS(cairn_manager_restore_items(m, 1, items, NULL), CAIRN_ERR_NOT_FOUND, "rank");
  CHECK_STATUS(cairn_items_add_bytes_target(items, "other", -2), CAIRN_ERR_INVALID_ARGUMENT,
               "from_rank");
  cairn_items_free(items);
  CHECK_OK(cairn_manager_free(m));
}

/* Custom metadata per item, saved with a step and given back by a restore of the item. */
static void item_metadata(const cairn_comm* comm, int rank, int size) {
  double x = 0.0;
  char meta[64];
  char step_meta_key[] = "\"item_custom_metadata\"";
  cairn_manager_options o;
  cairn_manager* m = NULL;
  cairn_items* items = NULL;
  cairn_tree* field = capi_test_field(&x, rank, size, 2.5);
  char* text = NULL;
  void* data = NULL;
  size_t count = 0;
  snprintf(meta, sizeof meta, "{\"units\":\"m\",\"ranks\":%d}", size);
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  CHECK_OK(cairn_manager_create(comm, capi_test_path("item_metadata"), &o, &m));
  CHECK_OK(cairn_items_create(&items));
  CHECK_OK(cairn_items_add_tree(items, "field", field));
  CHECK_OK(cairn_items_add_json(items, "config", "{\"dt\": 1}"));
  CHECK_OK(cairn_items_add_bytes(items, "blob", "ab", 2, 1));
  CHECK_STATUS(cairn_items_set_metadata(items, "missing", "{}"), CAIRN_ERR_NOT_FOUND, "missing");
  CHECK_STATUS(cairn_items_set_metadata(items, "field", "[1]"), CAIRN_ERR_INVALID_ARGUMENT,
               "not a JSON object");
  CHECK_OK(cairn_items_set_metadata(items, "field", meta));
  CHECK_OK(cairn_items_set_metadata(items, "blob", "{\"codec\":\"mine-v2\"}"));
  check_metadata(items, "field", meta);
  CHECK_OK(cairn_manager_save_items(m, 3, items, NULL, NULL));
  CHECK_OK(cairn_manager_wait_until_finished(m));
  cairn_items_free(items);
  CHECK_OK(cairn_manager_step_metadata(m, 3, &text));
  CHECK(strstr(text, step_meta_key) != NULL && strstr(text, "mine-v2") != NULL);
  cairn_free(text);

  /* the metadata comes back with each item restored; an item saved without any gets {} */
  x = -1.0;
  CHECK_OK(cairn_items_create(&items));
  CHECK_OK(cairn_items_add_tree(items, "field", field));
  CHECK_OK(cairn_items_add_json(items, "config", NULL));
  CHECK_OK(cairn_items_add_bytes_target(items, "blob", CAIRN_BYTES_OWN_RANK));
  CHECK_OK(cairn_manager_restore_items(m, 3, items, NULL));
  CHECK(x == 2.5);
  check_metadata(items, "field", meta);
  check_metadata(items, "blob", "{\"codec\":\"mine-v2\"}");
  check_metadata(items, "config", "{}");
  CHECK_STATUS(cairn_items_get_bytes(items, "field", &data, &count), CAIRN_ERR_INVALID_ARGUMENT,
               "item 'field' is a tree, not bytes");
  cairn_items_free(items);
  cairn_tree_free(field);
  CHECK_OK(cairn_manager_free(m));
}

/* Empty groups and lists of a tree round-trip through a save and a restore as saved. */
static void empty_nodes(const cairn_comm* comm, int rank, int size) {
  double x = 0.0;
  cairn_manager_options o;
  cairn_manager* m = NULL;
  cairn_tree* tree = capi_test_field(&x, rank, size, 1.0);
  cairn_tree* back = NULL;
  size_t count = 0;
  char* path = NULL;
  int kind = -1;
  CHECK_OK(cairn_tree_add_empty(tree, "optimizer/state", CAIRN_EMPTY_GROUP));
  CHECK_OK(cairn_tree_add_empty(tree, "history", CAIRN_EMPTY_LIST));
  CHECK_STATUS(cairn_tree_add_empty(tree, "x", CAIRN_EMPTY_GROUP), CAIRN_ERR_INVALID_ARGUMENT, "x");
  CHECK_STATUS(cairn_tree_add_empty(tree, "other", 7), CAIRN_ERR_INVALID_ARGUMENT, "kind 7");
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  CHECK_OK(cairn_manager_create(comm, capi_test_path("empty_nodes"), &o, &m));
  CHECK_OK(cairn_manager_save(m, 1, tree, NULL, NULL));
  CHECK_OK(cairn_manager_wait_until_finished(m));
  CHECK_OK(cairn_manager_restore_as_saved(m, 1, NULL, &back));
  CHECK_OK(cairn_tree_empty_count(back, &count));
  CHECK(count == 2);
  CHECK_OK(cairn_tree_empty_node(back, 0, &path, &kind));
  CHECK(strcmp(path, "history") == 0 && kind == CAIRN_EMPTY_LIST);
  cairn_free(path);
  CHECK_OK(cairn_tree_empty_node(back, 1, &path, &kind));
  CHECK(strcmp(path, "optimizer/state") == 0 && kind == CAIRN_EMPTY_GROUP);
  cairn_free(path);
  CHECK_STATUS(cairn_tree_empty_node(back, 2, &path, &kind), CAIRN_ERR_NOT_FOUND, "index 2");
  CHECK_OK(cairn_tree_leaf_count(back, &count));
  CHECK(count == 1);
  cairn_tree_free(back);
  cairn_tree_free(tree);
  CHECK_OK(cairn_manager_free(m));
}

/* A plain checkpointer of composites, synchronous then asynchronous: a tree, a JSON value and
 * bytes with custom metadata, restored and compared. */
static void checkpointer_items(const cairn_comm* comm, int rank, int size) {
  char mine[64];
  int async;
  rank_payload(rank, mine, sizeof mine);
  for (async = 0; async <= 1; ++async) {
    const char* dir = capi_test_path(async ? "composite_async" : "composite_sync");
    double x = 0.0;
    cairn_tree* field = capi_test_field(&x, rank, size, 4.0 + async);
    cairn_checkpointer* c = NULL;
    cairn_items* items = NULL;
    char* text = NULL;
    CHECK_OK(cairn_checkpointer_create_composite(comm, async, &c));
    CHECK_STATUS(cairn_checkpointer_save(c, dir, field, NULL), CAIRN_ERR_INVALID_ARGUMENT,
                 "saves items");
    CHECK_OK(cairn_items_create(&items));
    CHECK_OK(cairn_items_add_tree(items, "field", field));
    CHECK_OK(cairn_items_add_json(items, "config", "{\"async\": true}"));
    CHECK_OK(cairn_items_add_bytes(items, "blob", mine, strlen(mine), 0));
    CHECK_OK(cairn_items_set_metadata(items, "blob", "{\"v\":2}"));
    CHECK_OK(cairn_checkpointer_save_items(c, dir, items, NULL));
    CHECK_OK(cairn_checkpointer_wait_until_finished(c));
    cairn_items_free(items);

    x = -1.0;
    CHECK_OK(cairn_items_create(&items));
    CHECK_OK(cairn_items_add_tree(items, "field", field));
    CHECK_OK(cairn_items_add_json(items, "config", NULL));
    CHECK_OK(cairn_items_add_bytes_target(items, "blob", CAIRN_BYTES_OWN_RANK));
    CHECK_OK(cairn_checkpointer_restore_items(c, dir, items, NULL));
    CHECK(x == 4.0 + async);
    check_bytes(items, "blob", mine);
    check_metadata(items, "blob", "{\"v\":2}");
    CHECK_OK(cairn_items_get_json(items, "config", &text));
    CHECK(strcmp(text, "{\"async\":true}") == 0);
    cairn_free(text);
    CHECK_OK(cairn_checkpointer_metadata(c, dir, &text));
    CHECK(strstr(text, "cairn.composite") != NULL && strstr(text, "cairn.bytes") != NULL);
    cairn_free(text);
    cairn_items_free(items);
    cairn_checkpointer_free(c);

    /* a checkpointer of trees refuses items */
    CHECK_OK(cairn_checkpointer_create(comm, 0, &c));
    CHECK_OK(cairn_items_create(&items));
    CHECK_STATUS(cairn_checkpointer_restore_items(c, dir, items, NULL), CAIRN_ERR_INVALID_ARGUMENT,
                 "saves one tree");
    cairn_items_free(items);
    cairn_checkpointer_free(c);
    cairn_tree_free(field);
  }
}

int main(int argc, char** argv) {
  static const capi_test_scenario scenarios[] = {{"bytes", bytes},
                                                 {"item_metadata", item_metadata},
                                                 {"empty_nodes", empty_nodes},
                                                 {"checkpointer_items", checkpointer_items}};
  return capi_test_main(argc, argv, "test_capi_items", scenarios,
                        sizeof scenarios / sizeof scenarios[0]);
}
