/* Bad input through the C ABI gives a status and a message naming the problem, never a
 * crash: NULL handles and pointers, unknown dtypes, wrong sizes, bad paths and JSON, options
 * that were never initialized, overlapping boxes, a restore into the wrong dtype or shape,
 * missing steps. Exits non-zero on any failure. */
#include <cairn/cairn.h>

#include <stdio.h>
#include <string.h>

#include "capi_test.h"

static void arguments(void) {
  const int64_t dims[2] = {2, 3};
  const int64_t big[1] = {6};
  const int64_t offset[1] = {4};
  const int64_t extent[1] = {4};
  double buffer[6] = {0, 1, 2, 3, 4, 5};
  const double half = 2.5;
  size_t size = 0;
  int kind = 0;
  int32_t i32 = 0;
  char* text = NULL;
  cairn_tree* tree = NULL;
  cairn_items* items = NULL;
  cairn_array_desc desc;

  CHECK(strcmp(cairn_status_name(CAIRN_ERR_NOT_FOUND), "not found") == 0);
  CHECK(strcmp(cairn_status_name(CAIRN_OK), "ok") == 0);
  CHECK(strcmp(cairn_status_name(1234), "unknown status") == 0);
  cairn_free(NULL);
  cairn_tree_free(NULL);
  cairn_items_free(NULL);
  cairn_comm_free(NULL);
  CHECK_OK(cairn_manager_free(NULL));

  /* NULL handles and outputs */
  CHECK_STATUS(cairn_tree_create(NULL), CAIRN_ERR_INVALID_ARGUMENT, "out (output) is NULL");
  CHECK_STATUS(cairn_comm_create(MPI_COMM_WORLD, NULL), CAIRN_ERR_INVALID_ARGUMENT, "out");
  CHECK_STATUS(cairn_comm_create(MPI_COMM_NULL, (cairn_comm**)&text), CAIRN_ERR_INVALID_ARGUMENT,
               "MPI_COMM_NULL");
  CHECK_STATUS(cairn_tree_add_array(NULL, "a", CAIRN_FLOAT64, 2, dims, NULL, NULL, buffer, 0),
               CAIRN_ERR_INVALID_ARGUMENT, "cairn_tree_add_array: tree is NULL");
  CHECK_STATUS(cairn_manager_save(NULL, 0, NULL, NULL, NULL), CAIRN_ERR_INVALID_ARGUMENT,
               "cairn_manager_save: manager is NULL");
  CHECK_STATUS(cairn_manager_latest_step(NULL, NULL, NULL), CAIRN_ERR_INVALID_ARGUMENT,
               "manager is NULL");
  CHECK_STATUS(cairn_multihost_save(NULL, 0, NULL), CAIRN_ERR_INVALID_ARGUMENT,
               "multihost is NULL");
  CHECK_STATUS(cairn_comm_rank(NULL, &kind), CAIRN_ERR_INVALID_ARGUMENT, "comm is NULL");

  CHECK_OK(cairn_tree_create(&tree));
  CHECK_STATUS(cairn_tree_add_string(tree, NULL, "x"), CAIRN_ERR_INVALID_ARGUMENT, "path is NULL");
  CHECK_STATUS(cairn_tree_add_scalar(tree, "s", CAIRN_INT32, NULL), CAIRN_ERR_INVALID_ARGUMENT,
               "value is NULL");
  CHECK_STATUS(cairn_tree_add_array(tree, "a", CAIRN_FLOAT64, 2, NULL, NULL, NULL, buffer, 0),
               CAIRN_ERR_INVALID_ARGUMENT, "global_dims is NULL");
  CHECK_STATUS(cairn_tree_add_array(tree, "a", CAIRN_FLOAT64, 2, dims, NULL, NULL, NULL, 0),
               CAIRN_ERR_INVALID_ARGUMENT, "a");
  CHECK_STATUS(cairn_tree_add_array_desc(tree, "a", NULL), CAIRN_ERR_INVALID_ARGUMENT,
               "desc is NULL");

  /* unknown dtypes, flags, memory kinds; bad ndim; a box outside the array */
  CHECK_STATUS(cairn_tree_add_array(tree, "a", 99, 2, dims, NULL, NULL, buffer, 0),
               CAIRN_ERR_INVALID_ARGUMENT, "unknown dtype 99");
  CHECK_STATUS(cairn_dtype_size(-1, &size), CAIRN_ERR_INVALID_ARGUMENT, "unknown dtype -1");
  CHECK(cairn_dtype_name(15) == NULL);
  CHECK(strcmp(cairn_dtype_name(CAIRN_BFLOAT16), "bfloat16") == 0);
  CHECK_OK(cairn_dtype_size(CAIRN_COMPLEX128, &size));
  CHECK(size == 16);
  CHECK_STATUS(cairn_tree_add_array(tree, "a", CAIRN_FLOAT64, 2, dims, NULL, NULL, buffer, 8),
               CAIRN_ERR_INVALID_ARGUMENT, "unknown flags 8");
  CHECK_STATUS(cairn_tree_add_array(tree, "a", CAIRN_FLOAT64, 40, dims, NULL, NULL, buffer, 0),
               CAIRN_ERR_INVALID_ARGUMENT, "ndim 40");
  CHECK_STATUS(
      cairn_tree_add_array(tree, "outside", CAIRN_FLOAT64, 1, big, offset, extent, buffer, 0),
      CAIRN_ERR_INVALID_ARGUMENT, "outside");
  CHECK_OK(cairn_array_desc_init(&desc, sizeof desc));
  desc.ndim = 2;
  desc.global_dims = dims;
  desc.data = buffer;
  desc.memory = 7;
  CHECK_STATUS(cairn_tree_add_array_desc(tree, "a", &desc), CAIRN_ERR_INVALID_ARGUMENT,
               "unknown memory kind 7");
  desc.memory = CAIRN_MEMORY_HOST;
  desc.struct_size = 0;
  CHECK_STATUS(cairn_tree_add_array_desc(tree, "a", &desc), CAIRN_ERR_INVALID_ARGUMENT,
               "struct_size");
  CHECK_STATUS(cairn_array_desc_init(&desc, 2), CAIRN_ERR_INVALID_ARGUMENT, "struct_size 2");

  /* bad paths, duplicates, JSON */
  CHECK_STATUS(cairn_tree_add_string(tree, "a//b", "x"), CAIRN_ERR_INVALID_ARGUMENT, "a//b");
  CHECK_OK(cairn_tree_add_array(tree, "a", CAIRN_FLOAT64, 2, dims, NULL, NULL, buffer, 0));
  CHECK_STATUS(cairn_tree_add_string(tree, "a", "x"), CAIRN_ERR_INVALID_ARGUMENT, "a");
  CHECK_STATUS(cairn_tree_add_json(tree, "j", "{oops"), CAIRN_ERR_INVALID_ARGUMENT,
               "json_text is not valid JSON");
  CHECK_OK(cairn_tree_add_scalar(tree, "half", CAIRN_FLOAT64, &half));

  /* reading back: wrong sizes, kinds, casts that would truncate */
  CHECK_STATUS(cairn_tree_read_array(tree, "a", CAIRN_FLOAT64, buffer, 16),
               CAIRN_ERR_INVALID_ARGUMENT, "needs 48");
  CHECK_STATUS(cairn_tree_read_array(tree, "a", CAIRN_FLOAT64, NULL, 48),
               CAIRN_ERR_INVALID_ARGUMENT, "buffer is NULL");
  CHECK_STATUS(cairn_tree_get_scalar(tree, "half", CAIRN_INT32, &i32), CAIRN_ERR_INVALID_ARGUMENT,
               "half");
  CHECK_STATUS(cairn_tree_get_string(tree, "half", &text), CAIRN_ERR_INVALID_ARGUMENT, "half");
  CHECK_STATUS(cairn_tree_leaf_kind(tree, "missing", &kind), CAIRN_ERR_NOT_FOUND, "missing");
  CHECK_STATUS(cairn_tree_leaf_path(tree, 10, &text), CAIRN_ERR_NOT_FOUND, "leaf index 10");
  CHECK_STATUS(cairn_tree_array_info(tree, "a", NULL, NULL, 1, (int64_t*)buffer, NULL, NULL, NULL),
               CAIRN_ERR_INVALID_ARGUMENT, "2 dimensions");
  CHECK_OK(cairn_tree_leaf_path(tree, 0, &text));
  CHECK(strcmp(text, "a") == 0);
  cairn_free(text);

  /* items */
  CHECK_OK(cairn_items_create(&items));
  CHECK_STATUS(cairn_items_add_json(items, "__x", "1"), CAIRN_ERR_INVALID_ARGUMENT, "__x");
  CHECK_STATUS(cairn_items_add_json(items, "x", "[1,"), CAIRN_ERR_INVALID_ARGUMENT, "JSON");
  CHECK_OK(cairn_items_add_tree(items, "t", tree));
  CHECK_STATUS(cairn_items_add_tree(items, "t", tree), CAIRN_ERR_INVALID_ARGUMENT, "already added");
  CHECK_STATUS(cairn_items_get_json(items, "nope", &text), CAIRN_ERR_NOT_FOUND, "nope");
  CHECK_STATUS(cairn_items_get_json(items, "t", &text), CAIRN_ERR_INVALID_ARGUMENT, "is a tree");
  cairn_items_free(items);
  cairn_tree_free(tree);
}

static void collective(const cairn_comm* comm, int rank, int size) {
  const int64_t global[1] = {4};
  int64_t offset[1];
  const int64_t extent[1] = {4};
  double x[4] = {1, 2, 3, 4};
  int32_t wrong[4];
  double bigger[8];
  const int64_t bigger_dims[1] = {8};
  cairn_manager_options o;
  cairn_manager* m = NULL;
  cairn_tree* tree = NULL;
  cairn_tree* target = NULL;
  int64_t step = -1;
  int found = -1;

  /* options that were never initialized */
  memset(&o, 0, sizeof o);
  CHECK_STATUS(cairn_manager_create(comm, capi_test_path("uninit"), &o, &m),
               CAIRN_ERR_INVALID_ARGUMENT, "struct_size");
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  o.max_to_keep = -2;
  CHECK_STATUS(cairn_manager_create(comm, capi_test_path("bad"), &o, &m),
               CAIRN_ERR_INVALID_ARGUMENT, "max_to_keep");
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  o.create = 0;
  CHECK_STATUS(cairn_manager_create(comm, capi_test_path("missing"), &o, &m), CAIRN_ERR_NOT_FOUND,
               "missing");
  CHECK(m == NULL);

  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  o.enable_async = 0;
  o.barrier_timeout_s = 120;
  CHECK_OK(cairn_manager_create(comm, capi_test_path("run"), &o, &m));
  CHECK_STATUS(cairn_manager_restore(m, CAIRN_STEP_LATEST, NULL, NULL), CAIRN_ERR_INVALID_ARGUMENT,
               "target is NULL");
  CHECK_OK(cairn_tree_create(&target));
  CHECK_STATUS(cairn_manager_restore(m, CAIRN_STEP_LATEST, target, NULL), CAIRN_ERR_NOT_FOUND,
               "no committed checkpoint");
  CHECK_STATUS(cairn_manager_delete_step(m, 9), CAIRN_ERR_NOT_FOUND, "step 9");

  /* overlapping boxes: every rank claims the whole array without the replicated flag */
  if (size > 1) {
    CHECK_OK(cairn_tree_create(&tree));
    CHECK_OK(cairn_tree_add_array(tree, "ov", CAIRN_FLOAT64, 1, global, NULL, NULL, x, 0));
    CHECK_STATUS(cairn_manager_save(m, 1, tree, NULL, NULL), CAIRN_ERR_INVALID_ARGUMENT, "overlap");
    CHECK(strstr(cairn_last_error(), "ov") != NULL);
    CHECK_OK(cairn_manager_latest_step(m, &step, &found));
    CHECK(found == 0); /* nothing was committed */
    cairn_tree_free(tree);
  }

  /* a valid save: rank r holds the whole array as a replicated leaf */
  CHECK_OK(cairn_tree_create(&tree));
  offset[0] = 0;
  CHECK_OK(cairn_tree_add_array(tree, "x", CAIRN_FLOAT64, 1, global, offset, extent, x,
                                CAIRN_ARRAY_REPLICATED));
  CHECK_OK(cairn_manager_save(m, 2, tree, NULL, NULL));
  {
    /* an existing step: not saved without force, an error with force */
    cairn_save_options s;
    int saved = 1;
    CHECK_OK(cairn_manager_save(m, 2, tree, NULL, &saved));
    CHECK(saved == 0);
    CHECK_OK(cairn_save_options_init(&s, sizeof s));
    s.force = 1;
    CHECK_STATUS(cairn_manager_save(m, 2, tree, &s, NULL), CAIRN_ERR_INVALID_ARGUMENT,
                 "already exists");
  }
  {
    cairn_save_options s;
    CHECK_OK(cairn_save_options_init(&s, sizeof s));
    s.metrics_json = "[1, 2]";
    CHECK_STATUS(cairn_manager_save(m, 3, tree, &s, NULL), CAIRN_ERR_INVALID_ARGUMENT,
                 "metrics_json must be a JSON object");
    s.metrics_json = NULL;
    s.format = 5;
    CHECK_STATUS(cairn_manager_save(m, 3, tree, &s, NULL), CAIRN_ERR_INVALID_ARGUMENT,
                 "unknown storage format 5");
  }

  /* restore into the wrong dtype, the wrong shape, a missing leaf or step */
  CHECK_OK(cairn_tree_add_array(target, "x", CAIRN_INT32, 1, global, NULL, NULL, wrong, 0));
  CHECK_STATUS(cairn_manager_restore(m, 2, target, NULL), CAIRN_ERR_INVALID_ARGUMENT, "leaf 'x'");
  CHECK(strstr(cairn_last_error(), "allow_cast") != NULL);
  cairn_tree_free(target);
  CHECK_OK(cairn_tree_create(&target));
  CHECK_OK(cairn_tree_add_array(target, "x", CAIRN_FLOAT64, 1, bigger_dims, NULL, NULL, bigger, 0));
  CHECK_STATUS(cairn_manager_restore(m, 2, target, NULL), CAIRN_ERR_INVALID_ARGUMENT,
               "global shape");
  cairn_tree_free(target);
  CHECK_OK(cairn_tree_create(&target));
  CHECK_OK(cairn_tree_add_array(target, "y", CAIRN_FLOAT64, 1, global, NULL, NULL, bigger, 0));
  CHECK_STATUS(cairn_manager_restore(m, 2, target, NULL), CAIRN_ERR_NOT_FOUND, "y");
  CHECK_STATUS(cairn_manager_restore(m, 5, target, NULL), CAIRN_ERR_NOT_FOUND, "step 5");
  cairn_tree_free(target);
  cairn_tree_free(tree);
  (void)rank;
  CHECK_OK(cairn_manager_free(m));
}

int main(int argc, char** argv) {
  int rank = 0;
  int size = 0;
  cairn_comm* comm = NULL;
  MPI_Init(&argc, &argv);
  CHECK(strcmp(cairn_last_error(), "") == 0);
  CHECK_OK(cairn_comm_create(MPI_COMM_WORLD, &comm));
  CHECK_OK(cairn_comm_rank(comm, &rank));
  CHECK_OK(cairn_comm_size(comm, &size));
  capi_test_dir();
  arguments();
  collective(comm, rank, size);
  cairn_comm_free(comm);
  capi_test_finish();
  if (rank == 0) printf("test_capi_errors: passed on %d ranks\n", size);
  MPI_Finalize();
  return 0;
}
