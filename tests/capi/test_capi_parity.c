/* The options of Orbax's and CLU's managers through the C ABI, one scenario per ctest case
 * (argv[1]): the injectable clock, should_save(step, latest_step), CLU's and custom step names,
 * the EveryNSteps / EveryNStepsClosest / LatestDuration policies, should_keep_fn, restore from
 * another root, the user's root metadata, prevent_write_metrics, the plain checkpointers, and
 * the restore of a given multihost step, keep_time_interval_s, option structs of a caller
 * built against an older cairn.h, and incremental saves. Time-based cases use a fake clock, never
 * sleeps. C99, cairn.h and MPI only. */
#include <cairn/cairn.h>

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi_test.h"

#define SECOND_NS INT64_C(1000000000)

/* The fake clock of every scenario: the same on every rank, moved by the test. */
static int64_t fake_now_ns = INT64_C(1700000000) * SECOND_NS;

static int64_t fake_clock(void* user_data) {
  (void)user_data;
  return fake_now_ns;
}

/* Saves `step` with value `step` (and `metrics` when not NULL); returns whether it saved. */
static int save_step(cairn_manager* m, int64_t step, const char* metrics, int rank, int size) {
  double x = 0.0;
  int saved = -1;
  cairn_save_options s;
  cairn_tree* tree = capi_test_field(&x, rank, size, (double)step);
  CHECK_OK(cairn_save_options_init(&s, sizeof s));
  s.metrics_json = metrics;
  CHECK_OK(cairn_manager_save(m, step, tree, &s, &saved));
  CHECK_OK(cairn_manager_wait_until_finished(m));
  cairn_tree_free(tree);
  return saved;
}

/* The committed steps of `m` equal the `count` steps at `want`. */
static void check_steps(cairn_manager* m, const int64_t* want, size_t count) {
  int64_t* steps = NULL;
  size_t n = 0;
  size_t i;
  CHECK_OK(cairn_manager_all_steps(m, 1, &steps, &n));
  if (n != count) {
    fprintf(stderr, "got %zu steps:", n);
    for (i = 0; i < n; ++i) fprintf(stderr, " %lld", (long long)steps[i]);
    fprintf(stderr, "\n");
  }
  CHECK(n == count);
  for (i = 0; i < n; ++i) CHECK(steps[i] == want[i]);
  cairn_free(steps);
}

/* The value restored from `step` of `m` (CAIRN_STEP_LATEST: the newest). */
static double restored(cairn_manager* m, int64_t step, int rank, int size) {
  double x = 0.0;
  cairn_tree* tree = capi_test_field(&x, rank, size, -1.0);
  CHECK_OK(cairn_manager_restore(m, step, tree, NULL));
  cairn_tree_free(tree);
  return x;
}

/* A synchronous manager of `root` with `o`, on the fake clock. */
static cairn_manager* open_manager(const cairn_comm* comm, const char* root,
                                   cairn_manager_options* o) {
  cairn_manager* m = NULL;
  o->enable_async = 0;
  o->clock = fake_clock;
  CHECK_OK(cairn_manager_create(comm, root, o, &m));
  return m;
}

static void clock_scenario(const cairn_comm* comm, int rank, int size) {
  cairn_manager_options o;
  cairn_save_policy* every_10s = NULL;
  cairn_manager* m = NULL;
  int flag = -1;
  char* text = NULL;
  char t0[32];
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  CHECK(o.clock == NULL && o.clock_user_data == NULL);
  CHECK_OK(cairn_save_policy_continuous(10, &every_10s));
  o.save_decision_policy = every_10s;
  m = open_manager(comm, capi_test_path("clock"), &o);
  cairn_save_policy_free(every_10s);
  CHECK(save_step(m, 0, NULL, rank, size) == 1);
  /* the step's time is the fake clock's */
  snprintf(t0, sizeof t0, "%lld", (long long)fake_now_ns);
  CHECK_OK(cairn_manager_step_metadata(m, 0, &text));
  CHECK(strstr(text, t0) != NULL);
  cairn_free(text);
  fake_now_ns += 9 * SECOND_NS;
  CHECK_OK(cairn_manager_should_save(m, 1, &flag));
  CHECK(flag == 0); /* 9 s after the last save */
  CHECK(save_step(m, 1, NULL, rank, size) == 0);
  fake_now_ns += 1 * SECOND_NS;
  CHECK(save_step(m, 2, NULL, rank, size) == 1); /* 10 s: without the clock this needs 10 s */
  {
    const int64_t want[] = {0, 2};
    check_steps(m, want, 2);
  }
  CHECK_OK(cairn_manager_free(m));
}

static int64_t latest_seen = -1;

/* Saves when nothing was saved, or 3 steps after the newest saved step. */
static int every_third(int64_t step, int64_t latest_step, int has_latest, void* user_data) {
  CHECK(user_data == &latest_seen);
  latest_seen = has_latest ? latest_step : -1;
  return !has_latest || step >= latest_step + 3;
}

static void should_save_latest(const cairn_comm* comm, int rank, int size) {
  cairn_manager_options o;
  cairn_manager* m = NULL;
  cairn_save_policy* policy = NULL;
  int64_t step;
  char* text = NULL;
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  o.should_save_latest_fn = every_third;
  o.should_save_user_data = &latest_seen;
  m = open_manager(comm, capi_test_path("latest"), &o);
  for (step = 0; step < 8; ++step) (void)save_step(m, step, NULL, rank, size);
  {
    const int64_t want[] = {0, 3, 6};
    check_steps(m, want, 3);
  }
  if (rank == 0) CHECK(latest_seen == 6); /* the predicate runs on the primary only */
  CHECK_OK(cairn_manager_free(m));
  /* the policy object of the same predicate */
  CHECK_OK(cairn_save_policy_fn_latest(every_third, &latest_seen, &policy));
  CHECK_OK(cairn_save_policy_describe(policy, &text));
  CHECK(strstr(text, "ShouldSaveFn") != NULL);
  cairn_free(text);
  cairn_save_policy_free(policy);
  CHECK_STATUS(cairn_save_policy_fn_latest(NULL, NULL, &policy), CAIRN_ERR_INVALID_ARGUMENT, "fn");
}

static void step_names_clu(const cairn_comm* comm, int rank, int size) {
  cairn_manager_options o;
  cairn_manager* m = NULL;
  char path[4096];
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  o.step_name_format = CAIRN_STEP_NAME_CLU;
  m = open_manager(comm, capi_test_path("clu"), &o);
  CHECK(save_step(m, 3, NULL, rank, size) == 1);
  CHECK_OK(cairn_manager_free(m));
  snprintf(path, sizeof path, "%s/ckpt-3", capi_test_path("clu"));
  CHECK(capi_test_is_dir(path));
  m = open_manager(comm, capi_test_path("clu"), &o);
  {
    const int64_t want[] = {3};
    check_steps(m, want, 1);
  }
  CHECK(restored(m, 3, rank, size) == 3.0);
  CHECK_OK(cairn_manager_free(m));
  o.step_prefix = "run";
  CHECK_STATUS(cairn_manager_create(comm, capi_test_path("clu_bad"), &o, &m),
               CAIRN_ERR_INVALID_ARGUMENT, "step_prefix");
}

/* A custom format: "s<step, 5 digits>.ck". */
static int build_name(int64_t step, char* name, size_t capacity, void* user_data) {
  (void)user_data;
  return snprintf(name, capacity, "s%05lld.ck", (long long)step) < (int)capacity ? 0 : 1;
}

static int parse_name(const char* name, int64_t* step, void* user_data) {
  long long value = -1;
  char rebuilt[64];
  if (sscanf(name, "s%5lld.ck", &value) != 1 || value < 0) return 0;
  if (build_name(value, rebuilt, sizeof rebuilt, user_data) != 0) return 0;
  if (strcmp(rebuilt, name) != 0) return 0; /* one spelling per step */
  *step = value;
  return 1;
}

static void step_names_custom(const cairn_comm* comm, int rank, int size) {
  cairn_manager_options o;
  cairn_manager* m = NULL;
  char path[4096];
  char* text = NULL;
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  o.step_name_format = CAIRN_STEP_NAME_CUSTOM;
  o.step_name_build = build_name;
  o.step_name_parse = parse_name;
  o.step_name_description = "s<step>.ck";
  m = open_manager(comm, capi_test_path("custom"), &o);
  CHECK(save_step(m, 7, NULL, rank, size) == 1);
  CHECK_OK(cairn_manager_root_metadata(m, &text));
  CHECK(strstr(text, "s<step>.ck") != NULL);
  cairn_free(text);
  CHECK_OK(cairn_manager_free(m));
  snprintf(path, sizeof path, "%s/s00007.ck", capi_test_path("custom"));
  CHECK(capi_test_is_dir(path));
  m = open_manager(comm, capi_test_path("custom"), &o);
  {
    const int64_t want[] = {7};
    check_steps(m, want, 1);
  }
  CHECK(restored(m, CAIRN_STEP_LATEST, rank, size) == 7.0);
  CHECK_OK(cairn_manager_free(m));
  o.step_name_parse = NULL;
  CHECK_STATUS(cairn_manager_create(comm, capi_test_path("custom_bad"), &o, &m),
               CAIRN_ERR_INVALID_ARGUMENT, "step_name_parse");
}

/* Saves `count` steps at `steps` with `policy` as the preservation policy, and checks that the
 * `kept_count` steps at `kept` remain. */
static void keeps(const cairn_comm* comm, const char* name, cairn_manager_options* o,
                  const int64_t* steps, size_t count, const int64_t* kept, size_t kept_count,
                  int rank, int size) {
  cairn_manager* m = open_manager(comm, capi_test_path(name), o);
  size_t i;
  for (i = 0; i < count; ++i) {
    CHECK(save_step(m, steps[i], NULL, rank, size) == 1);
    if (i + 1 < count) fake_now_ns += 60 * SECOND_NS;
  }
  check_steps(m, kept, kept_count);
  CHECK_OK(cairn_manager_free(m));
}

static void every_n_steps_inexact(const cairn_comm* comm, int rank, int size) {
  const int64_t steps[] = {0, 2, 4, 5, 7, 9};
  const int64_t inexact[] = {0, 4, 7, 9}; /* first, then each >= 3 after the kept one */
  const int64_t exact[] = {0, 9};         /* multiples of 3, and the newest */
  cairn_manager_options o;
  cairn_preservation_policy* p = NULL;
  char* text = NULL;
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  CHECK_OK(cairn_preservation_policy_every_n_steps_ex(3, 0, CAIRN_KEEP_ALL, &p));
  o.preservation_policy = p;
  keeps(comm, "inexact", &o, steps, 6, inexact, 4, rank, size);
  CHECK_OK(cairn_preservation_policy_describe(p, &text));
  CHECK(strstr(text, "not exact") != NULL);
  cairn_free(text);
  cairn_preservation_policy_free(p);
  CHECK_OK(cairn_preservation_policy_every_n_steps_ex(3, 1, CAIRN_KEEP_ALL, &p));
  o.preservation_policy = p;
  keeps(comm, "exact", &o, steps, 6, exact, 2, rank, size);
  cairn_preservation_policy_free(p);
  CHECK_STATUS(cairn_preservation_policy_every_n_steps_ex(3, 0, -2, &p), CAIRN_ERR_INVALID_ARGUMENT,
               "max_to_keep");
}

static void every_n_steps_closest(const cairn_comm* comm, int rank, int size) {
  const int64_t steps[] = {0, 3, 5, 9};
  const int64_t kept[] = {0, 5, 9}; /* 0 for 0, the later of 3 and 5 for 4, 9 for 8 */
  cairn_manager_options o;
  cairn_preservation_policy* p = NULL;
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  CHECK_OK(cairn_preservation_policy_every_n_steps_closest(4, CAIRN_KEEP_ALL, &p));
  o.preservation_policy = p;
  keeps(comm, "closest", &o, steps, 4, kept, 3, rank, size);
  cairn_preservation_policy_free(p);
}

static void latest_duration(const cairn_comm* comm, int rank, int size) {
  const int64_t steps[] = {0, 1, 2}; /* saved 60 s apart on the fake clock */
  const int64_t kept[] = {1, 2};     /* step 0 is 120 s old when step 2 is saved */
  cairn_manager_options o;
  cairn_preservation_policy* p = NULL;
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  CHECK_OK(cairn_preservation_policy_latest_duration(100, fake_clock, NULL, &p));
  o.preservation_policy = p;
  keeps(comm, "duration", &o, steps, 3, kept, 2, rank, size);
  cairn_preservation_policy_free(p);
}

/* keep_time_interval_s on the fake clock: steps 0 to 5 saved 60 s apart, max_to_keep 1; one
 * step per 100 s window is kept besides the newest. On the system clock (saves within a second)
 * the steps share one window and only 0 and 5 would remain. */
static void keep_time_interval(const cairn_comm* comm, int rank, int size) {
  const int64_t steps[] = {0, 1, 2, 3, 4, 5};
  const int64_t kept[] = {0, 2, 4, 5}; /* windows [0, 100), [100, 200), [200, 300), newest */
  cairn_manager_options o;
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  o.max_to_keep = 1;
  o.keep_time_interval_s = 100;
  keeps(comm, "time_interval", &o, steps, 6, kept, 4, rank, size);
}

static int keep_two(int64_t step, void* user_data) {
  (void)user_data;
  return step == 2;
}

static void should_keep(const cairn_comm* comm, int rank, int size) {
  const int64_t steps[] = {0, 1, 2, 3, 4};
  const int64_t kept[] = {2, 4}; /* the newest (max_to_keep 1) and what should_keep_fn keeps */
  cairn_manager_options o;
  cairn_preservation_policy* p = NULL;
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  o.max_to_keep = 1;
  o.should_keep_fn = keep_two;
  keeps(comm, "keep_fn", &o, steps, 5, kept, 2, rank, size);
  /* with a policy object instead of max_to_keep */
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  CHECK_OK(cairn_preservation_policy_latest_n(1, &p));
  o.preservation_policy = p;
  o.should_keep_fn = keep_two;
  keeps(comm, "keep_fn_policy", &o, steps, 5, kept, 2, rank, size);
  cairn_preservation_policy_free(p);
  /* the same predicate as a policy object */
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  CHECK_OK(cairn_preservation_policy_fn(keep_two, NULL, &p));
  o.preservation_policy = p;
  keeps(comm, "keep_policy", &o, steps, 5, kept, 2, rank, size);
  cairn_preservation_policy_free(p);
}

static void restore_from(const cairn_comm* comm, int rank, int size) {
  cairn_manager_options o;
  cairn_manager* a = NULL;
  cairn_manager* b = NULL;
  cairn_tree* tree = NULL;
  double x = 0.0;
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  o.step_prefix = "checkpoint";
  a = open_manager(comm, capi_test_path("pretrained"), &o);
  CHECK(save_step(a, 5, NULL, rank, size) == 1);
  CHECK(save_step(a, 6, NULL, rank, size) == 1);
  CHECK_OK(cairn_manager_free(a));
  b = open_manager(comm, capi_test_path("finetune"), &o);
  tree = capi_test_field(&x, rank, size, -1.0);
  CHECK_OK(cairn_manager_restore_from(b, capi_test_path("pretrained"), 5, tree, NULL));
  CHECK(x == 5.0);
  CHECK_OK(
      cairn_manager_restore_from(b, capi_test_path("pretrained"), CAIRN_STEP_LATEST, tree, NULL));
  CHECK(x == 6.0);
  CHECK_STATUS(cairn_manager_restore_from(b, capi_test_path("pretrained"), 9, tree, NULL),
               CAIRN_ERR_NOT_FOUND, "9");
  check_steps(b, NULL, 0); /* nothing was written to the manager's own root */
  cairn_tree_free(tree);
  CHECK_OK(cairn_manager_free(b));
}

static void root_metadata(const cairn_comm* comm, int rank, int size) {
  cairn_manager_options o;
  cairn_manager* m = NULL;
  char* text = NULL;
  char path[4096];
  (void)rank;
  (void)size;
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  CHECK(o.metadata_json == NULL);
  o.metadata_json = "{\"run\":\"r1\"}";
  m = open_manager(comm, capi_test_path("meta"), &o);
  CHECK_OK(cairn_manager_root_metadata(m, &text));
  CHECK(strstr(text, "\"user\":{\"run\":\"r1\"}") != NULL);
  cairn_free(text);
  CHECK_OK(cairn_manager_free(m));
  snprintf(path, sizeof path, "%s/cairn-root.json", capi_test_path("meta"));
  CHECK(capi_test_is_file(path));
  /* the first manager's metadata stays */
  o.metadata_json = "{\"run\":\"r2\"}";
  m = open_manager(comm, capi_test_path("meta"), &o);
  CHECK_OK(cairn_manager_root_metadata(m, &text));
  CHECK(strstr(text, "\"run\":\"r1\"") != NULL);
  cairn_free(text);
  CHECK_OK(cairn_manager_free(m));
  /* save_root_metadata = 0: no file, and no root metadata to report (as Orbax) */
  o.save_root_metadata = 0;
  m = open_manager(comm, capi_test_path("meta_unsaved"), &o);
  CHECK_OK(cairn_manager_root_metadata(m, &text));
  CHECK(strcmp(text, "{}") == 0);
  cairn_free(text);
  CHECK_OK(cairn_manager_free(m));
  snprintf(path, sizeof path, "%s/cairn-root.json", capi_test_path("meta_unsaved"));
  CHECK(!capi_test_is_file(path));
  o.metadata_json = "[1]";
  CHECK_STATUS(cairn_manager_create(comm, capi_test_path("meta_bad"), &o, &m),
               CAIRN_ERR_INVALID_ARGUMENT, "metadata_json");
}

static void prevent_write_metrics(const cairn_comm* comm, int rank, int size) {
  cairn_manager_options o;
  cairn_manager* m = NULL;
  char* text = NULL;
  int64_t step = -1;
  int found = -1;
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  CHECK(o.prevent_write_metrics == 0);
  o.prevent_write_metrics = 1;
  o.max_to_keep = 2;
  o.best_metric = "loss";
  o.best_mode = CAIRN_BEST_MIN;
  m = open_manager(comm, capi_test_path("no_metrics"), &o);
  CHECK(save_step(m, 0, "{\"loss\":3}", rank, size) == 1);
  CHECK(save_step(m, 1, "{\"loss\":1}", rank, size) == 1);
  CHECK(save_step(m, 2, "{\"loss\":2}", rank, size) == 1);
  CHECK_OK(cairn_manager_best_step(m, &step, &found));
  CHECK(found == 1 && step == 1); /* ranked by the metrics this manager holds ... */
  {
    const int64_t want[] = {1, 2}; /* ... which retention used too */
    check_steps(m, want, 2);       /* (a reload: they are gone from here on) */
  }
  CHECK_OK(cairn_manager_step_metadata(m, 1, &text));
  CHECK(strstr(text, "\"metrics\":{}") != NULL); /* not written */
  cairn_free(text);
  CHECK_OK(cairn_manager_free(m));
  m = open_manager(comm, capi_test_path("no_metrics"), &o);
  CHECK_OK(cairn_manager_metrics(m, 1, &text));
  CHECK(strcmp(text, "{}") == 0);
  cairn_free(text);
  CHECK_OK(cairn_manager_best_step(m, &step, &found));
  CHECK(found == 0); /* best_metric finds no metric on disk */
  CHECK_OK(cairn_manager_free(m));
}

/* Incremental saves (CheckpointManagerOptions::incremental): each step changes the first of
 * the 8 checksum chunks of every rank's shard, so a step writes that chunk and refers to the
 * others of the step before; retention deletes the older steps, and the newest restores
 * exactly. */
static void incremental(const cairn_comm* comm, int rank, int size) {
  enum { kCount = 4096 }; /* float64 per rank: 8 chunks of 4 KiB */
  const int64_t global[1] = {(int64_t)kCount * size};
  const int64_t offset[1] = {(int64_t)kCount * rank};
  const int64_t extent[1] = {kCount};
  double* x = malloc(kCount * sizeof(double));
  cairn_manager_options o;
  cairn_save_options s;
  cairn_manager* m = NULL;
  cairn_tree* tree = NULL;
  char* text = NULL;
  int saved = -1;
  int step;
  int i;
  CHECK(x != NULL);
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  CHECK(o.incremental == 0);
  o.incremental = 1;
  o.max_to_keep = 1;
  m = open_manager(comm, capi_test_path("incremental"), &o);
  CHECK_OK(cairn_tree_create(&tree));
  CHECK_OK(cairn_tree_add_array(tree, "x", CAIRN_FLOAT64, 1, global, offset, extent, x, 0));
  CHECK_OK(cairn_save_options_init(&s, sizeof s));
  s.checksum_chunk_bytes = 4096;
  for (step = 0; step < 3; ++step) {
    for (i = 0; i < kCount; ++i) x[i] = 1e6 * rank + i + (i < kCount / 8 ? 0.5 * step : 0.0);
    CHECK_OK(cairn_manager_save(m, step, tree, &s, &saved));
    CHECK(saved == 1);
    CHECK_OK(cairn_manager_wait_until_finished(m));
  }
  {
    const int64_t want[] = {2};
    check_steps(m, want, 1);
  }
  /* 7 of each rank's 8 chunks lie in the files of earlier steps. */
  CHECK_OK(cairn_manager_item_metadata(m, 2, &text));
  {
    char expected[64];
    snprintf(expected, sizeof expected, "\"referenced_bytes\":%d", 7 * 4096 * size);
    if (strstr(text, expected) == NULL) fprintf(stderr, "item metadata: %s\n", text);
    CHECK(strstr(text, expected) != NULL);
  }
  cairn_free(text);
  for (i = 0; i < kCount; ++i) x[i] = -1.0;
  CHECK_OK(cairn_manager_restore(m, 2, tree, NULL));
  for (i = 0; i < kCount; ++i) CHECK(x[i] == 1e6 * rank + i + (i < kCount / 8 ? 1.0 : 0.0));
  CHECK_OK(cairn_manager_free(m));
  cairn_tree_free(tree);
  free(x);
}

static void checkpointer_sync(const cairn_comm* comm, int rank, int size) {
  cairn_checkpointer* c = NULL;
  cairn_save_options s;
  cairn_tree* tree = NULL;
  double x = 0.0;
  char* text = NULL;
  int busy = -1;
  const char* dir = capi_test_path("plain");
  CHECK_OK(cairn_checkpointer_create(comm, 0, &c));
  tree = capi_test_field(&x, rank, size, 1.0);
  CHECK_OK(cairn_save_options_init(&s, sizeof s));
  s.custom_metadata_json = "{\"origin\":\"c\"}";
  CHECK_OK(cairn_checkpointer_save(c, dir, tree, &s));
  CHECK_STATUS(cairn_checkpointer_save(c, dir, tree, NULL), CAIRN_ERR_INVALID_ARGUMENT,
               "already exists");
  x = 2.0;
  s.force = 1; /* replaces the checkpoint */
  CHECK_OK(cairn_checkpointer_save(c, dir, tree, &s));
  CHECK_OK(cairn_checkpointer_is_saving_in_progress(c, &busy));
  CHECK(busy == 0);
  x = -1.0;
  CHECK_OK(cairn_checkpointer_restore(c, dir, tree, NULL));
  CHECK(x == 2.0);
  CHECK_OK(cairn_checkpointer_metadata(c, dir, &text));
  CHECK(strstr(text, "cairn.array_tree") != NULL && strstr(text, "\"origin\":\"c\"") != NULL);
  cairn_free(text);
  CHECK_STATUS(cairn_checkpointer_restore(c, capi_test_path("missing"), tree, NULL),
               CAIRN_ERR_NOT_FOUND, "missing");
  cairn_checkpointer_free(c);
  cairn_tree_free(tree);
}

static void checkpointer_async(const cairn_comm* comm, int rank, int size) {
  cairn_checkpointer* c = NULL;
  cairn_tree* tree = NULL;
  double x = 0.0;
  int busy = -1;
  const char* dir = capi_test_path("async");
  CHECK_OK(cairn_checkpointer_create(comm, 1, &c));
  tree = capi_test_field(&x, rank, size, 3.0);
  CHECK_OK(cairn_checkpointer_save(c, dir, tree, NULL));
  x = 99.0; /* the save staged a copy: this change is not saved */
  CHECK_OK(cairn_checkpointer_wait_until_finished(c));
  CHECK_OK(cairn_checkpointer_is_saving_in_progress(c, &busy));
  CHECK(busy == 0);
  CHECK(capi_test_is_dir(dir));
  CHECK_OK(cairn_checkpointer_restore(c, dir, tree, NULL));
  CHECK(x == 3.0);
  cairn_checkpointer_free(c);
  /* a synchronous checkpointer reads what the asynchronous one wrote */
  CHECK_OK(cairn_checkpointer_create(comm, 0, &c));
  x = -1.0;
  CHECK_OK(cairn_checkpointer_restore(c, dir, tree, NULL));
  CHECK(x == 3.0);
  cairn_checkpointer_free(c);
  cairn_tree_free(tree);
}

static void multihost_restore(const cairn_comm* comm, int rank, int size) {
  cairn_multihost* mh = NULL;
  cairn_tree* tree = NULL;
  double x = 0.0;
  CHECK_OK(cairn_multihost_create(comm, capi_test_path("mh"), NULL, &mh));
  tree = capi_test_field(&x, rank, size, 1.0);
  CHECK_OK(cairn_multihost_save(mh, 1, tree));
  x = 2.0;
  CHECK_OK(cairn_multihost_save(mh, 2, tree));
  x = -1.0;
  CHECK_OK(cairn_multihost_restore(mh, 1, tree));
  CHECK(x == 1.0);
  CHECK_STATUS(cairn_multihost_restore(mh, 5, tree), CAIRN_ERR_NOT_FOUND, "5");
  cairn_multihost_free(mh);
  cairn_tree_free(tree);
}

/* A caller built against a cairn.h older than the fields appended in 0.1: its manager options
 * end before `clock`, its save options before `checksum_chunk_bytes`, its restore options
 * before `renames`. The library must read nothing past struct_size: the bytes there hold
 * garbage that would be a clock, callbacks, pointers and prevent_write_metrics. */
static void older_structs(const cairn_comm* comm, int rank, int size) {
  cairn_manager_options o;
  cairn_save_options s;
  cairn_restore_options r;
  cairn_manager* m = NULL;
  cairn_tree* tree = NULL;
  double x = 0.0;
  int saved = -1;
  char* text = NULL;
  memset(&o, 0xA5, sizeof o);
  memset(&s, 0xA5, sizeof s);
  memset(&r, 0xA5, sizeof r);
  CHECK_OK(cairn_manager_options_init(&o, offsetof(cairn_manager_options, clock)));
  CHECK(o.struct_size == offsetof(cairn_manager_options, clock) && o.max_to_keep == CAIRN_KEEP_ALL);
  o.enable_async = 0;
  CHECK_OK(cairn_save_options_init(&s, offsetof(cairn_save_options, checksum_chunk_bytes)));
  s.metrics_json = "{\"loss\":1}";
  CHECK_OK(cairn_restore_options_init(&r, offsetof(cairn_restore_options, renames)));
  CHECK_OK(cairn_manager_create(comm, capi_test_path("older"), &o, &m));
  tree = capi_test_field(&x, rank, size, 4.0);
  CHECK_OK(cairn_manager_save(m, 4, tree, &s, &saved));
  CHECK(saved == 1);
  x = -1.0;
  CHECK_OK(cairn_manager_restore(m, 4, tree, &r));
  CHECK(x == 4.0);
  cairn_tree_free(tree);
  CHECK_OK(cairn_manager_step_metadata(m, 4, &text));
  CHECK(strstr(text, "\"loss\"") != NULL); /* written: prevent_write_metrics is its default */
  cairn_free(text);
  CHECK_OK(cairn_manager_free(m));
}

static const capi_test_scenario scenarios[] = {
    {"clock", clock_scenario},
    {"should_save_latest", should_save_latest},
    {"step_names_clu", step_names_clu},
    {"step_names_custom", step_names_custom},
    {"every_n_steps_inexact", every_n_steps_inexact},
    {"every_n_steps_closest", every_n_steps_closest},
    {"latest_duration", latest_duration},
    {"should_keep", should_keep},
    {"restore_from", restore_from},
    {"root_metadata", root_metadata},
    {"prevent_write_metrics", prevent_write_metrics},
    {"checkpointer_sync", checkpointer_sync},
    {"checkpointer_async", checkpointer_async},
    {"multihost_restore", multihost_restore},
    {"keep_time_interval", keep_time_interval},
    {"older_structs", older_structs},
    {"incremental", incremental},
};

int main(int argc, char** argv) {
  return capi_test_main(argc, argv, "test_capi_parity", scenarios,
                        sizeof scenarios / sizeof scenarios[0]);
}
