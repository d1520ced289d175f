/* The checkpoint manager through the C ABI only: a series with retention and metrics, composed
 * policy objects, integer logicals, best step (also with steps that lack the metric), restore N->M
 * into another decomposition on fewer ranks, partial and as-saved restore, composite items with
 * JSON, and the multihost restart. Exits non-zero on any failure. */
#include <cairn/cairn.h>

#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi_test.h"

enum { NY = 8, NX = 6 };

/* The format of the best-step series: hdf5 where cairn was built with it (CAIRN_TEST_HDF5 is
 * set by tests/capi/CMakeLists.txt), so that one series goes through the other format. */
#if CAIRN_TEST_HDF5
#define BEST_FORMAT CAIRN_FORMAT_HDF5
#else
#define BEST_FORMAT CAIRN_FORMAT_POSIX
#endif

static double value(int64_t y, int64_t x, int64_t step) { return 100.0 * y + x + step; }

/* Block partition of n items over `parts`: [*first, *first + *count). */
static void block(int64_t n, int part, int parts, int64_t* first, int64_t* count) {
  *first = n * part / parts;
  *count = n * (part + 1) / parts - *first;
}

/* A tree with this rank's rows of u, a replicated int32 array, a scalar, a string, JSON. */
static cairn_tree* make_state(double* u, int32_t* n, int rank, int size, int64_t step) {
  const int64_t global[2] = {NY, NX};
  int64_t offset[2] = {0, 0};
  int64_t local[2] = {0, NX};
  const int64_t n_dims[1] = {3};
  const double time = 0.5 * (double)step;
  char info[64];
  cairn_tree* tree = NULL;
  int64_t y;
  int64_t x;
  block(NY, rank, size, &offset[0], &local[0]);
  for (y = 0; y < local[0]; ++y) {
    for (x = 0; x < NX; ++x) u[y * NX + x] = value(offset[0] + y, x, step);
  }
  n[0] = 7;
  n[1] = (int32_t)step;
  n[2] = -1;
  snprintf(info, sizeof info, "{\"step\": %d}", (int)step);
  CHECK_OK(cairn_tree_create(&tree));
  CHECK_OK(cairn_tree_add_array(tree, "fields/u", CAIRN_FLOAT64, 2, global, offset, local, u, 0));
  CHECK_OK(cairn_tree_add_array(tree, "n", CAIRN_INT32, 1, n_dims, NULL, NULL, n,
                                CAIRN_ARRAY_REPLICATED));
  CHECK_OK(cairn_tree_add_scalar(tree, "time", CAIRN_FLOAT64, &time));
  CHECK_OK(cairn_tree_add_string(tree, "name", "heat"));
  CHECK_OK(cairn_tree_add_json(tree, "info", info));
  return tree;
}

/* Checks a column block [x0, x0 + nx) of all rows of u at `step`. */
static void check_columns(const double* u, int64_t x0, int64_t nx, int64_t step) {
  int64_t y;
  int64_t x;
  for (y = 0; y < NY; ++y) {
    for (x = 0; x < nx; ++x) CHECK(u[y * nx + x] == value(y, x0 + x, step));
  }
}

static void series(const cairn_comm* comm, int rank, int size) {
  double u[NY * NX];
  int32_t n[3];
  cairn_manager_options o;
  cairn_save_options s;
  cairn_manager* m = NULL;
  int64_t* steps = NULL;
  size_t count = 0;
  int64_t step;
  int found = 0;
  int flag = -1;
  char* text = NULL;
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  CHECK(o.save_interval_steps == 1 && o.enable_async == 1 && o.max_to_keep == CAIRN_KEEP_ALL);
  CHECK(o.file_mode == -1 && o.file_group == NULL && o.write_timeout_s == 0);
  o.max_to_keep = 2;
  o.barrier_timeout_s = 120;
  o.file_mode = 0640; /* the files of a shared project directory */
  CHECK_OK(cairn_manager_create(comm, capi_test_path("series"), &o, &m));
  for (step = 0; step < 5; ++step) {
    char metrics[64];
    char custom[64];
    cairn_tree* tree = make_state(u, n, rank, size, step);
    int saved = 0;
    CHECK_OK(cairn_save_options_init(&s, sizeof s));
    snprintf(metrics, sizeof metrics, "{\"loss\": %d}", (int)(10 - step));
    snprintf(custom, sizeof custom, "{\"note\": \"s%d\"}", (int)step);
    s.metrics_json = metrics;
    s.custom_metadata_json = custom;
    CHECK_OK(cairn_manager_save(m, step, tree, &s, &saved));
    CHECK(saved == 1);
    cairn_tree_free(tree); /* the save took what it needs */
  }
  CHECK_OK(cairn_manager_wait_until_finished(m));
  CHECK_OK(cairn_manager_is_saving_in_progress(m, &flag));
  CHECK(flag == 0);
  CHECK_OK(cairn_manager_all_steps(m, 0, &steps, &count));
  CHECK(count == 2 && steps[0] == 3 && steps[1] == 4);
  {
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/4/cairn-step.json", capi_test_path("series"));
    CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0640);
    snprintf(path, sizeof path, "%s/4", capi_test_path("series"));
    CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0750);
  }
  cairn_free(steps);
  CHECK_OK(cairn_manager_latest_step(m, &step, &found));
  CHECK(found == 1 && step == 4);
  CHECK_OK(cairn_manager_best_step(m, &step, &found));
  CHECK(found == 1 && step == 4); /* no best_metric: the newest, as in Orbax */
  CHECK_OK(cairn_manager_metrics(m, 4, &text));
  CHECK(strcmp(text, "{\"loss\":6}") == 0);
  cairn_free(text);
  CHECK_OK(cairn_manager_custom_metadata(m, 3, &text));
  CHECK(strcmp(text, "{\"note\":\"s3\"}") == 0);
  cairn_free(text);
  CHECK_OK(cairn_manager_step_metadata(m, 4, &text));
  CHECK(strstr(text, "\"cairn.array_tree\"") != NULL);
  cairn_free(text);
  CHECK_OK(cairn_manager_item_metadata(m, 4, &text));
  CHECK(strstr(text, "fields/u") != NULL);
  cairn_free(text);
  CHECK_OK(cairn_manager_root_metadata(m, &text));
  CHECK(strstr(text, "cairn-root") != NULL);
  cairn_free(text);
  CHECK_OK(cairn_manager_step_path(m, 4, &text));
  CHECK(strstr(text, "series/4") != NULL);
  cairn_free(text);
  CHECK_OK(cairn_manager_should_save(m, 5, &flag));
  CHECK(flag == 1);
  CHECK_OK(cairn_manager_reached_preemption(m, 5, &flag));
  CHECK(flag == 0);
  CHECK_OK(cairn_manager_check_for_errors(m));
  CHECK_OK(cairn_manager_delete_step(m, 3));
  CHECK_OK(cairn_manager_all_steps(m, 1, &steps, &count));
  CHECK(count == 1 && steps[0] == 4);
  cairn_free(steps);
  CHECK_OK(cairn_manager_close(m));
  CHECK_OK(cairn_manager_close(m)); /* idempotent */
  CHECK_OK(cairn_manager_free(m));
}

static int is_ten(int64_t step, void* user_data) {
  ++*(int*)user_data;
  return step == 10;
}

/* Composed policy objects: save AnyOf(FixedInterval(4), SpecificSteps{7}, fn: step 10), keep
 * AnyOf(LatestN(2), EveryNSteps(8)); the handles are freed right after the manager takes them.
 * Bad arguments of the constructors fail with a message naming them. */
static void policies(const cairn_comm* comm, int rank, int size) {
  double u[NY * NX];
  int32_t n[3];
  const int64_t seven = 7;
  int calls = 0;
  cairn_save_policy* save[3] = {NULL, NULL, NULL};
  cairn_save_policy* save_any = NULL;
  cairn_preservation_policy* keep[2] = {NULL, NULL};
  cairn_preservation_policy* keep_any = NULL;
  cairn_save_policy* bad = NULL;
  const cairn_save_policy* with_null[2];
  cairn_manager_options o;
  cairn_manager* m = NULL;
  int64_t* steps = NULL;
  size_t count = 0;
  int64_t step;
  char* text = NULL;
  CHECK_OK(cairn_save_policy_fixed_interval(4, &save[0]));
  CHECK_OK(cairn_save_policy_specific_steps(&seven, 1, &save[1]));
  CHECK_OK(cairn_save_policy_fn(is_ten, &calls, &save[2]));
  CHECK_OK(cairn_save_policy_any_of((const cairn_save_policy* const*)save, 3, &save_any));
  CHECK_OK(cairn_preservation_policy_latest_n(2, &keep[0]));
  CHECK_OK(cairn_preservation_policy_every_n_steps(8, &keep[1]));
  CHECK_OK(cairn_preservation_policy_any_of((const cairn_preservation_policy* const*)keep, 2,
                                            &keep_any));
  CHECK_OK(cairn_save_policy_describe(save_any, &text));
  CHECK(strcmp(text, "AnyOf(FixedInterval(4), SpecificSteps({7}), ShouldSaveFn)") == 0);
  cairn_free(text);
  CHECK_OK(cairn_preservation_policy_describe(keep_any, &text));
  CHECK(strcmp(text, "AnyOf(LatestN(2), EveryNSteps(8))") == 0);
  cairn_free(text);

  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  CHECK(o.save_decision_policy == NULL && o.preservation_policy == NULL);
  o.save_decision_policy = save_any;
  o.preservation_policy = keep_any;
  o.barrier_timeout_s = 120;
  CHECK_OK(cairn_manager_create(comm, capi_test_path("policies"), &o, &m));
  cairn_save_policy_free(save[0]);
  cairn_save_policy_free(save[1]);
  cairn_save_policy_free(save[2]);
  cairn_save_policy_free(save_any);
  cairn_preservation_policy_free(keep[0]);
  cairn_preservation_policy_free(keep[1]);
  cairn_preservation_policy_free(keep_any);
  for (step = 1; step <= 16; ++step) {
    cairn_tree* tree = make_state(u, n, rank, size, step);
    int saved = -1;
    CHECK_OK(cairn_manager_save(m, step, tree, NULL, &saved));
    CHECK(saved == (step % 4 == 0 || step == 7 || step == 10));
    cairn_tree_free(tree);
  }
  /* The function runs on the primary only, once per step it is asked about. */
  CHECK(rank == 0 ? calls > 0 : calls == 0);
  CHECK_OK(cairn_manager_wait_until_finished(m));
  CHECK_OK(cairn_manager_all_steps(m, 0, &steps, &count));
  CHECK(count == 3 && steps[0] == 8 && steps[1] == 12 && steps[2] == 16);
  cairn_free(steps);
  CHECK_OK(cairn_manager_free(m));

  CHECK_STATUS(cairn_save_policy_fixed_interval(0, &bad), CAIRN_ERR_INVALID_ARGUMENT, "interval");
  CHECK_STATUS(cairn_save_policy_continuous(-1, &bad), CAIRN_ERR_INVALID_ARGUMENT, "negative");
  CHECK_STATUS(cairn_preservation_policy_best_n(2, CAIRN_BEST_MIN, 1, NULL),
               CAIRN_ERR_INVALID_ARGUMENT, "out");
  CHECK_STATUS(cairn_preservation_policy_best_n(2, 7, 1, &keep_any), CAIRN_ERR_INVALID_ARGUMENT,
               "best_mode");
  CHECK_STATUS(cairn_save_policy_specific_steps(NULL, 2, &bad), CAIRN_ERR_INVALID_ARGUMENT,
               "steps is NULL");
  CHECK_OK(cairn_save_policy_initial(&bad));
  with_null[0] = bad;
  with_null[1] = NULL;
  CHECK_STATUS(cairn_save_policy_any_of(with_null, 2, &save_any), CAIRN_ERR_INVALID_ARGUMENT,
               "policies[1] is NULL");
  CHECK_STATUS(cairn_save_policy_fn(NULL, NULL, &save_any), CAIRN_ERR_INVALID_ARGUMENT,
               "fn is NULL");
  cairn_save_policy_free(bad);
  cairn_save_policy_free(NULL);
}

static int flag_of(int64_t y, int64_t x, int64_t step) { return (y + x + step) % 3 == 0; }

/* Integer logicals (cairn_tree_add_logical_array): int32 flags whose true is 7 are saved as
 * bools when save is called (the caller overwrites them right after an async save), restored
 * as 1/0 into int32 flags on a column decomposition, into a strided int8 view, and into a
 * plain CAIRN_BOOL array. */
static void logicals(const cairn_comm* comm, int rank, int size) {
  const int64_t global[2] = {NY, NX};
  int64_t offset[2] = {0, 0};
  int64_t local[2] = {0, NX};
  int32_t flags[NY * NX];
  int32_t back[NY * NX];
  int8_t padded[NY * (NX + 1)]; /* rows of NX flags and one pad byte */
  uint8_t bools[NY * NX];
  const int64_t padded_strides[2] = {NX + 1, 1};
  cairn_array_desc d;
  cairn_manager_options o;
  cairn_manager* m = NULL;
  cairn_tree* tree = NULL;
  cairn_tree* target = NULL;
  int64_t x0;
  int64_t nx;
  int64_t y;
  int64_t x;
  int saved = 0;
  block(NY, rank, size, &offset[0], &local[0]);
  for (y = 0; y < local[0]; ++y) {
    for (x = 0; x < NX; ++x) flags[y * NX + x] = flag_of(offset[0] + y, x, 1) ? 7 : 0;
  }
  CHECK_OK(cairn_array_desc_init(&d, sizeof d));
  d.dtype = CAIRN_BOOL;
  d.ndim = 2;
  d.global_dims = global;
  d.offset = offset;
  d.local_dims = local;
  d.data = flags;
  CHECK_OK(cairn_tree_create(&tree));
  CHECK_OK(cairn_tree_add_logical_array(tree, "mask", sizeof(int32_t), &d));
  CHECK_STATUS(cairn_tree_add_logical_array(tree, "bad", 3, &d), CAIRN_ERR_INVALID_ARGUMENT,
               "elem_size is 3");
  d.dtype = CAIRN_INT32;
  CHECK_STATUS(cairn_tree_add_logical_array(tree, "bad", 4, &d), CAIRN_ERR_INVALID_ARGUMENT,
               "CAIRN_BOOL");
  d.dtype = CAIRN_BOOL;
  CHECK_STATUS(cairn_tree_add_logical_array(tree, "mask", 4, &d), CAIRN_ERR_INVALID_ARGUMENT,
               "mask");

  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  o.barrier_timeout_s = 120;
  CHECK_OK(cairn_manager_create(comm, capi_test_path("logicals"), &o, &m));
  CHECK_OK(cairn_manager_save(m, 1, tree, NULL, &saved));
  CHECK(saved == 1);
  memset(flags, 0, sizeof flags); /* the save converted them when it was called */
  CHECK_OK(cairn_manager_wait_until_finished(m));

  /* Columns [x0, x0 + nx) of every row into int32 flags. */
  block(NX, rank, size, &x0, &nx);
  offset[0] = 0;
  offset[1] = x0;
  local[0] = NY;
  local[1] = nx;
  for (y = 0; y < NY * NX; ++y) back[y] = 5;
  d.data = back;
  CHECK_OK(cairn_tree_create(&target));
  CHECK_OK(cairn_tree_add_logical_array(target, "mask", sizeof(int32_t), &d));
  CHECK_OK(cairn_manager_restore(m, CAIRN_STEP_LATEST, target, NULL));
  for (y = 0; y < NY; ++y) {
    for (x = 0; x < nx; ++x) CHECK(back[y * nx + x] == flag_of(y, x0 + x, 1));
  }
  /* The tree's own leaf reads as bools. */
  CHECK_OK(cairn_tree_read_array(target, "mask", CAIRN_BOOL, bools, (size_t)(NY * nx)));
  for (y = 0; y < NY * nx; ++y) CHECK(bools[y] == (uint8_t)back[y]);
  cairn_tree_free(target);

  /* The whole array into an int8 view with a pad byte after each row. */
  memset(padded, 9, sizeof padded);
  d.offset = NULL;
  d.local_dims = NULL;
  d.strides = padded_strides;
  d.data = padded;
  CHECK_OK(cairn_tree_create(&target));
  CHECK_OK(cairn_tree_add_logical_array(target, "mask", sizeof(int8_t), &d));
  CHECK_OK(cairn_manager_restore(m, CAIRN_STEP_LATEST, target, NULL));
  for (y = 0; y < NY; ++y) {
    for (x = 0; x < NX; ++x) CHECK(padded[y * (NX + 1) + x] == flag_of(y, x, 1));
    CHECK(padded[y * (NX + 1) + NX] == 9);
  }
  cairn_tree_free(target);

  /* A plain bool array reads the same values. */
  CHECK_OK(cairn_tree_create(&target));
  CHECK_OK(cairn_tree_add_array(target, "mask", CAIRN_BOOL, 2, global, NULL, NULL, bools, 0));
  CHECK_OK(cairn_manager_restore(m, CAIRN_STEP_LATEST, target, NULL));
  for (y = 0; y < NY; ++y) {
    for (x = 0; x < NX; ++x) CHECK(bools[y * NX + x] == flag_of(y, x, 1));
  }
  cairn_tree_free(target);
  cairn_tree_free(tree);
  CHECK_OK(cairn_manager_free(m));
}

static void best(const cairn_comm* comm, int rank, int size) {
  double u[NY * NX];
  int32_t n[3];
  const double losses[5] = {1.5, 0.5, 1.5, 2.5, 3.5};
  cairn_manager_options o;
  cairn_manager* m = NULL;
  int64_t step;
  int found = 0;
  int64_t* steps = NULL;
  size_t count = 0;
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  o.best_metric = "loss";
  o.best_mode = CAIRN_BEST_MIN;
  o.max_to_keep = 2;
  o.enable_async = 0;
  o.step_prefix = "step";
  o.step_format_fixed_length = 4;
  CHECK_OK(cairn_manager_create(comm, capi_test_path("best"), &o, &m));
  for (step = 0; step < 5; ++step) {
    char metrics[64];
    cairn_save_options s;
    cairn_tree* tree = make_state(u, n, rank, size, step);
    CHECK_OK(cairn_save_options_init(&s, sizeof s));
    snprintf(metrics, sizeof metrics, "{\"loss\": %.1f}", losses[step]);
    s.metrics_json = metrics;
    s.format = BEST_FORMAT;
    CHECK_OK(cairn_manager_save(m, step, tree, &s, NULL));
    cairn_tree_free(tree);
  }
  CHECK_OK(cairn_manager_best_step(m, &step, &found));
  CHECK(found == 1 && step == 1);
  CHECK_OK(cairn_manager_all_steps(m, 0, &steps, &count));
  /* the best two (1, then 0 or 2) and the newest (4) */
  CHECK(count == 3 && steps[0] <= 2 && steps[1] <= 2 && steps[2] == 4);
  CHECK(steps[0] == 1 || steps[1] == 1);
  cairn_free(steps);
  {
    char* path = NULL;
    CHECK_OK(cairn_manager_step_path(m, 4, &path));
    CHECK(strstr(path, "best/step_0004") != NULL);
    cairn_free(path);
  }
#if !CAIRN_TEST_HDF5
  {
    /* Without HDF5, a save in that format fails, naming the configure option, and commits
     * nothing. */
    cairn_save_options s;
    cairn_tree* tree = make_state(u, n, rank, size, 5);
    CHECK_OK(cairn_save_options_init(&s, sizeof s));
    s.format = CAIRN_FORMAT_HDF5;
    CHECK_STATUS(cairn_manager_save(m, 5, tree, &s, NULL), CAIRN_ERR_UNSUPPORTED, "CAIRN_USE_HDF5");
    cairn_tree_free(tree);
    CHECK_OK(cairn_manager_latest_step(m, &step, &found));
    CHECK(found == 1 && step == 4);
  }
#endif
  CHECK_OK(cairn_manager_free(m));
}

/* Steps whose metrics lack best_metric (or hold no number there) count as saved without
 * metrics: their saves succeed, best_step ignores them, and keep_checkpoints_without_metrics
 * decides whether retention keeps them. */
static void best_missing(const cairn_comm* comm, int rank, int size, int keep_without) {
  /* loss of steps 0..5: none, 3.0, "n/a" (not a number), 1.0, 2.0, none */
  const char* metrics[6] = {"{\"acc\": 1}",    "{\"loss\": 3.0}", "{\"loss\": \"n/a\"}",
                            "{\"loss\": 1.0}", "{\"loss\": 2.0}", "{\"acc\": 2}"};
  double u[NY * NX];
  int32_t n[3];
  cairn_manager_options o;
  cairn_manager* m = NULL;
  int64_t step;
  int64_t best = -1;
  int found = -1;
  int64_t* steps = NULL;
  size_t count = 0;
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  o.best_metric = "loss";
  o.best_mode = CAIRN_BEST_MIN;
  o.max_to_keep = 2;
  o.keep_checkpoints_without_metrics = keep_without;
  o.enable_async = 0;
  CHECK_OK(cairn_manager_create(
      comm, capi_test_path(keep_without ? "best_missing_kept" : "best_missing_dropped"), &o, &m));
  for (step = 0; step < 6; ++step) {
    cairn_save_options s;
    cairn_tree* tree = make_state(u, n, rank, size, step);
    int saved = 0;
    CHECK_OK(cairn_save_options_init(&s, sizeof s));
    s.metrics_json = metrics[step];
    CHECK_OK(cairn_manager_save(m, step, tree, &s, &saved));
    CHECK(saved == 1);
    cairn_tree_free(tree);
    if (step == 0) {
      CHECK_OK(cairn_manager_best_step(m, &best, &found));
      CHECK(found == 0); /* no step has a loss yet */
    }
  }
  CHECK_OK(cairn_manager_best_step(m, &best, &found));
  CHECK(found == 1 && best == 3);
  CHECK_OK(cairn_manager_all_steps(m, 0, &steps, &count));
  if (keep_without) {
    /* the best two by loss (3, 4), every step without a loss (0, 2, 5); 1 is deleted */
    CHECK(count == 5 && steps[0] == 0 && steps[1] == 2 && steps[2] == 3 && steps[3] == 4 &&
          steps[4] == 5);
  } else {
    /* the best two by loss (3, 4) and the newest (5) */
    CHECK(count == 3 && steps[0] == 3 && steps[1] == 4 && steps[2] == 5);
  }
  cairn_free(steps);
  CHECK_OK(cairn_manager_free(m));
}

/* Restores the series on the first `parts` ranks only, split by columns. */
static void restore_n_to_m(int rank, int size) {
  const int parts = size > 1 ? size - 1 : 1;
  MPI_Comm sub = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank < parts ? 0 : MPI_UNDEFINED, rank, &sub);
  if (sub != MPI_COMM_NULL) {
    const int64_t global[2] = {NY, NX};
    int64_t offset[2] = {0, 0};
    int64_t local[2] = {NY, 0};
    const int64_t n_dims[1] = {3};
    double u[NY * NX];
    int32_t n[3] = {0, 0, 0};
    double time = -1;
    const double zero = 0;
    char* text = NULL;
    cairn_comm* comm = NULL;
    cairn_manager* m = NULL;
    cairn_manager_options o;
    cairn_restore_options r;
    cairn_tree* target = NULL;
    cairn_tree* saved = NULL;
    int kind = -1;
    int dtype = -1;
    int ndim = -1;
    int64_t dims[CAIRN_MAX_DIMS];
    double whole[NY * NX];
    int64_t y;
    int64_t x;
    block(NX, rank, parts, &offset[1], &local[1]);
    CHECK_OK(cairn_comm_create(sub, &comm));
    CHECK_OK(cairn_manager_options_init(&o, sizeof o));
    o.read_only = 1;
    CHECK_OK(cairn_manager_create(comm, capi_test_path("series"), &o, &m));

    /* latest step, every leaf, another decomposition on other ranks */
    memset(u, 0, sizeof u);
    CHECK_OK(cairn_tree_create(&target));
    CHECK_OK(
        cairn_tree_add_array(target, "fields/u", CAIRN_FLOAT64, 2, global, offset, local, u, 0));
    CHECK_OK(cairn_tree_add_scalar(target, "time", CAIRN_FLOAT64, &zero));
    CHECK_OK(cairn_tree_add_string(target, "name", ""));
    CHECK_OK(cairn_tree_add_json(target, "info", "null"));
    CHECK_OK(cairn_manager_restore(m, CAIRN_STEP_LATEST, target, NULL));
    check_columns(u, offset[1], local[1], 4);
    CHECK_OK(cairn_tree_get_scalar(target, "time", CAIRN_FLOAT64, &time));
    CHECK(time == 2.0);
    CHECK_OK(cairn_tree_get_string(target, "name", &text));
    CHECK(strcmp(text, "heat") == 0);
    cairn_free(text);
    CHECK_OK(cairn_tree_get_json(target, "info", &text));
    CHECK(strcmp(text, "{\"step\":4}") == 0);
    cairn_free(text);
    cairn_tree_free(target);

    /* partial: one leaf of step 4 by number, with a cast to int64 */
    {
      int64_t n64[3] = {0, 0, 0};
      CHECK_OK(cairn_restore_options_init(&r, sizeof r));
      r.allow_cast = 1;
      CHECK_OK(cairn_tree_create(&target));
      CHECK_OK(cairn_tree_add_array(target, "n", CAIRN_INT64, 1, n_dims, NULL, NULL, n64, 0));
      CHECK_OK(cairn_manager_restore(m, 4, target, &r));
      CHECK(n64[0] == 7 && n64[1] == 4 && n64[2] == -1);
      cairn_tree_free(target);
    }

    /* as saved: whole arrays, only fields/ */
    {
      const char* select[1] = {"fields"};
      CHECK_OK(cairn_restore_options_init(&r, sizeof r));
      r.whole_arrays = 1;
      r.select = select;
      r.select_count = 1;
      CHECK_OK(cairn_manager_restore_as_saved(m, 4, &r, &saved));
      CHECK_OK(cairn_tree_leaf_kind(saved, "fields/u", &kind));
      CHECK(kind == CAIRN_LEAF_ARRAY);
      CHECK_STATUS(cairn_tree_leaf_kind(saved, "n", &kind), CAIRN_ERR_NOT_FOUND, "n");
      CHECK_OK(cairn_tree_array_info(saved, "fields/u", &dtype, &ndim, CAIRN_MAX_DIMS, dims, NULL,
                                     NULL, NULL));
      CHECK(dtype == CAIRN_FLOAT64 && ndim == 2 && dims[0] == NY && dims[1] == NX);
      CHECK_OK(cairn_tree_read_array(saved, "fields/u", CAIRN_FLOAT64, whole, sizeof whole));
      for (y = 0; y < NY; ++y) {
        for (x = 0; x < NX; ++x) CHECK(whole[y * NX + x] == value(y, x, 4));
      }
      cairn_tree_free(saved);
    }
    (void)n;
    CHECK_OK(cairn_manager_free(m));
    cairn_comm_free(comm);
    MPI_Comm_free(&sub);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

static void composite(const cairn_comm* comm, int rank, int size) {
  double u[NY * NX];
  double v[NY * NX];
  int32_t n[3];
  const int64_t global[2] = {NY, NX};
  int64_t offset[2] = {0, 0};
  int64_t local[2] = {NY, 0};
  cairn_manager_options o;
  cairn_manager* m = NULL;
  cairn_items* items = NULL;
  cairn_tree* state = make_state(u, n, rank, size, 7);
  cairn_tree* target = NULL;
  cairn_tree* as_saved = NULL;
  char* text = NULL;
  int64_t dims[2];
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  CHECK_OK(cairn_manager_create(comm, capi_test_path("composite"), &o, &m));
  CHECK_OK(cairn_items_create(&items));
  CHECK_OK(cairn_items_add_tree(items, "state", state));
  CHECK_OK(cairn_items_add_json(items, "config", "{\"dt\": 0.25, \"name\": \"run\"}"));
  CHECK_OK(cairn_manager_save_items(m, 7, items, NULL, NULL));
  CHECK_OK(cairn_manager_wait_until_finished(m));
  cairn_items_free(items);
  cairn_tree_free(state);

  /* restore both items: the tree into columns, the JSON as text */
  block(NX, rank, size, &offset[1], &local[1]);
  memset(v, 0, sizeof v);
  CHECK_OK(cairn_tree_create(&target));
  CHECK_OK(cairn_tree_add_array(target, "fields/u", CAIRN_FLOAT64, 2, global, offset, local, v, 0));
  CHECK_OK(cairn_items_create(&items));
  CHECK_OK(cairn_items_add_tree(items, "state", target));
  CHECK_OK(cairn_items_add_json(items, "config", NULL));
  CHECK_OK(cairn_manager_restore_items(m, CAIRN_STEP_LATEST, items, NULL));
  check_columns(v, offset[1], local[1], 7);
  CHECK_OK(cairn_items_get_json(items, "config", &text));
  CHECK(strcmp(text, "{\"dt\":2.5E-1,\"name\":\"run\"}") == 0);
  cairn_free(text);
  cairn_items_free(items);
  cairn_tree_free(target);

  /* partial: only the tree item, as saved */
  CHECK_OK(cairn_items_create(&items));
  CHECK_OK(cairn_items_add_tree(items, "state", NULL));
  CHECK_OK(cairn_manager_restore_items(m, 7, items, NULL));
  CHECK_STATUS(cairn_items_get_json(items, "config", &text), CAIRN_ERR_NOT_FOUND, "config");
  CHECK_OK(cairn_items_get_tree(items, "state", &as_saved));
  CHECK_OK(cairn_tree_array_info(as_saved, "fields/u", NULL, NULL, 2, dims, NULL, NULL, NULL));
  CHECK(dims[0] == NY && dims[1] == NX);
  cairn_tree_free(as_saved);
  cairn_items_free(items);
  CHECK_OK(cairn_manager_free(m));
}

static void multihost(const cairn_comm* comm, int rank, int size) {
  double x[4];
  const int64_t global[1] = {4 * (int64_t)size};
  const int64_t offset[1] = {4 * (int64_t)rank};
  const int64_t local[1] = {4};
  cairn_multihost_options o;
  cairn_multihost* mh = NULL;
  cairn_tree* state = NULL;
  int64_t step = -1;
  int found = -1;
  int i;
  CHECK_OK(cairn_multihost_options_init(&o, sizeof o));
  CHECK(o.max_to_keep == 5);
  for (i = 0; i < 4; ++i) x[i] = -1.0;
  CHECK_OK(cairn_tree_create(&state));
  CHECK_OK(cairn_tree_add_array(state, "x", CAIRN_FLOAT64, 1, global, offset, local, x, 0));
  CHECK_OK(cairn_multihost_create(comm, capi_test_path("mh"), &o, &mh));
  CHECK_OK(cairn_multihost_restore_or_initialize(mh, state, 0, &step));
  CHECK(step == 0);
  for (i = 0; i < 4; ++i) x[i] = 42.0 + rank + i;
  CHECK_OK(cairn_multihost_save(mh, 3, state));
  cairn_multihost_free(mh);

  for (i = 0; i < 4; ++i) x[i] = 0.0;
  CHECK_OK(cairn_multihost_create(comm, capi_test_path("mh"), NULL, &mh));
  CHECK_OK(cairn_multihost_latest_common_step(mh, &step, &found));
  CHECK(found == 1 && step == 3);
  CHECK_OK(cairn_multihost_restore_or_initialize(mh, state, 0, &step));
  CHECK(step == 3);
  for (i = 0; i < 4; ++i) CHECK(x[i] == 42.0 + rank + i);
  cairn_multihost_free(mh);
  cairn_tree_free(state);
}

static void best_missing_kept(const cairn_comm* comm, int rank, int size) {
  best_missing(comm, rank, size, 1);
}

static void best_missing_dropped(const cairn_comm* comm, int rank, int size) {
  best_missing(comm, rank, size, 0);
}

/* Restores the root that series() writes, on one rank fewer. */
static void n_to_m(const cairn_comm* comm, int rank, int size) {
  series(comm, rank, size);
  restore_n_to_m(rank, size);
}

/* The scenarios, each its own ctest case (tests/capi/CMakeLists.txt passes the name). */
static const capi_test_scenario scenarios[] = {
    {"series", series},
    {"policies", policies},
    {"logicals", logicals},
    {"best", best},
    {"best_missing_kept", best_missing_kept},
    {"best_missing_dropped", best_missing_dropped},
    {"restore_n_to_m", n_to_m},
    {"composite", composite},
    {"multihost", multihost},
};

/* Runs the scenario named by argv[1]. */
int main(int argc, char** argv) {
  return capi_test_main(argc, argv, "test_capi_manager", scenarios,
                        sizeof scenarios / sizeof scenarios[0]);
}
