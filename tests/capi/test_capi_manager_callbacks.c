/* The manager's callbacks and async staging through the C ABI, one scenario per ctest case
 * (argv[1]): best_fn ranks steps by a function of their metrics (a choice the metric name alone
 * would not make), on_commit is told every committed step on every rank, and
 * async_device_staging reaches the manager and leaves host leaves as they are (its device path:
 * test_capi_device). C99, cairn.h and MPI (and stderr_capture.h). */
#include <cairn/cairn.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi_test.h"
#include "stderr_capture.h"

/* Saves `step` with value `step` and metrics {"loss": <loss>}; returns whether it saved. */
static int save_step(cairn_manager* m, int64_t step, double loss, int rank, int size) {
  double x = 0.0;
  int saved = -1;
  char metrics[64];
  cairn_save_options s;
  cairn_tree* tree = capi_test_field(&x, rank, size, (double)step);
  CHECK_OK(cairn_save_options_init(&s, sizeof s));
  snprintf(metrics, sizeof metrics, "{\"loss\": %g}", loss);
  s.metrics_json = metrics;
  CHECK_OK(cairn_manager_save(m, step, tree, &s, &saved));
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

/* How far the step's loss is from a target of 0.5 (the user data), negated: the best step is
 * the one closest to the target, which neither the largest nor the smallest loss is. */
static int closest_to_target(const char* metrics_json, double* value, void* user_data) {
  const double target = *(const double*)user_data;
  const char* at = strstr(metrics_json, "\"loss\":");
  double loss;
  if (at == NULL) return 0;
  loss = strtod(at + strlen("\"loss\":"), NULL);
  *value = -(loss - target) * (loss - target);
  return 1;
}

static void best_fn(const cairn_comm* comm, int rank, int size) {
  static const double losses[] = {0.1, 0.45, 0.9, 0.2};
  double target = 0.5;
  const int64_t kept[] = {1, 3}; /* the best two by best_fn: 1 (0.45) and 3 (0.2); 3 is also
                                    the newest. By "loss" alone (max) they would be 1 and 2. */
  cairn_manager_options o;
  cairn_manager* m = NULL;
  int64_t best = -1;
  int found = 0;
  int64_t step;
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  CHECK(o.best_fn == NULL && o.best_user_data == NULL);
  o.best_fn = closest_to_target;
  o.best_user_data = &target;
  o.best_metric = "loss";
  CHECK_STATUS(cairn_manager_create(comm, capi_test_path("both"), &o, &m),
               CAIRN_ERR_INVALID_ARGUMENT, "best_metric or best_fn");
  o.best_metric = NULL;
  o.max_to_keep = 2;
  o.enable_async = 0;
  o.barrier_timeout_s = 120;
  CHECK_OK(cairn_manager_create(comm, capi_test_path("best_fn"), &o, &m));
  for (step = 0; step < 4; ++step) CHECK(save_step(m, step, losses[step], rank, size) == 1);
  CHECK_OK(cairn_manager_best_step(m, &best, &found));
  CHECK(found == 1 && best == 1);
  check_steps(m, kept, 2);
  CHECK_OK(cairn_manager_free(m));
}

/* What on_commit was told on this rank: the steps in order and whether each had its metrics. */
typedef struct {
  int64_t steps[16];
  int with_metrics[16];
  int count;
  int64_t fail_at; /* on_commit returns nonzero for this step */
} commit_log;

static int record_commit(int64_t step, const char* metrics_json, void* user_data) {
  commit_log* log = (commit_log*)user_data;
  CHECK(log->count < 16);
  log->steps[log->count] = step;
  log->with_metrics[log->count] = strstr(metrics_json, "\"loss\"") != NULL;
  ++log->count;
  return step == log->fail_at ? 7 : 0;
}

static void on_commit(const cairn_comm* comm, int rank, int size) {
  commit_log log;
  cairn_manager_options o;
  cairn_manager* m = NULL;
  const int64_t all[] = {0, 1, 2, 3};
  int64_t step;
  int i;
  memset(&log, 0, sizeof log);
  log.fail_at = 3;
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  CHECK(o.on_commit == NULL && o.on_commit_user_data == NULL);
  o.on_commit = record_commit;
  o.on_commit_user_data = &log;
  o.barrier_timeout_s = 120; /* async saves: commits are found by later calls */
  CHECK_OK(cairn_manager_create(comm, capi_test_path("on_commit"), &o, &m));
  for (step = 0; step < 3; ++step) CHECK(save_step(m, step, 1.0, rank, size) == 1);
  CHECK_OK(cairn_manager_wait_until_finished(m));
  /* every rank was told each step once, in order, with its metrics */
  CHECK(log.count == 3);
  for (i = 0; i < 3; ++i) CHECK(log.steps[i] == i && log.with_metrics[i] == 1);
  /* a nonzero return fails the call that found the commit on every rank; the step stays */
  CHECK(save_step(m, 3, 1.0, rank, size) == 1);
  CHECK_STATUS(cairn_manager_wait_until_finished(m), CAIRN_ERR_INVALID_ARGUMENT,
               "on_commit returned 7 for step 3");
  CHECK(log.count == 4 && log.steps[3] == 3);
  check_steps(m, all, 4);
  CHECK_OK(cairn_manager_free(m));
}

/* async_device_staging reaches the manager, which logs the settings it opened with (rank 0, at
 * the info level this test runs at); host leaves are staged in host memory whatever it says:
 * the snapshot taken by save() is what is restored, although the buffer changed before the save
 * finished. */
static void device_staging(const cairn_comm* comm, int rank, int size) {
  cairn_manager_options o;
  cairn_manager* m = NULL;
  cairn_tree* tree;
  double x = 0.0;
  int saved = 0;
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  CHECK(o.async_device_staging == 0);
  o.async_device_staging = 1;
  o.barrier_timeout_s = 120;
  if (rank == 0) CHECK(test_stderr_capture_begin(capi_test_path("stderr-0.txt")) == 0);
  CHECK_OK(cairn_manager_create(comm, capi_test_path("device_staging"), &o, &m));
  if (rank == 0) CHECK(test_stderr_capture_end("device_staging=true") == 1);
  tree = capi_test_field(&x, rank, size, 4.0);
  CHECK_OK(cairn_manager_save(m, 1, tree, NULL, &saved));
  CHECK(saved == 1);
  x = -1.0;
  CHECK_OK(cairn_manager_wait_until_finished(m));
  CHECK_OK(cairn_manager_restore(m, 1, tree, NULL));
  CHECK(x == 4.0);
  cairn_tree_free(tree);
  CHECK_OK(cairn_manager_free(m));
}

static const capi_test_scenario scenarios[] = {
    {"best_fn", best_fn},
    {"on_commit", on_commit},
    {"device_staging", device_staging},
};

int main(int argc, char** argv) {
  return capi_test_main(argc, argv, "test_capi_manager_callbacks", scenarios,
                        sizeof scenarios / sizeof scenarios[0]);
}
