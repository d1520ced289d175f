/* The manager options that follow Orbax through the C ABI: max_to_keep (CAIRN_KEEP_ALL and 0),
 * step name formats, saves of existing steps, read-only managers, the best step without a
 * metric, save_root_metadata, and a multihost base with a trailing '/'. C99, cairn.h and MPI
 * only. */
#include <cairn/cairn.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi_test.h"

/* Saves steps 0..count-1 and returns the number of steps kept. */
static size_t run(const cairn_comm* comm, const char* root, const cairn_manager_options* o,
                  int rank, int size, int64_t count) {
  cairn_manager* m = NULL;
  int64_t step;
  int64_t* steps = NULL;
  size_t kept = 0;
  double x = 0.0;
  CHECK_OK(cairn_manager_create(comm, root, o, &m));
  for (step = 0; step < count; ++step) {
    cairn_tree* tree = capi_test_field(&x, rank, size, (double)step);
    int saved = 0;
    CHECK_OK(cairn_manager_save(m, step, tree, NULL, &saved));
    CHECK(saved == 1);
    CHECK_OK(cairn_manager_wait_until_finished(m));
    cairn_tree_free(tree);
  }
  CHECK_OK(cairn_manager_all_steps(m, 1, &steps, &kept));
  if (kept > 0) CHECK(steps[kept - 1] == count - 1); /* the newest is always kept */
  cairn_free(steps);
  CHECK_OK(cairn_manager_free(m));
  return kept;
}

static void max_to_keep(const cairn_comm* comm, int rank, int size) {
  cairn_manager_options o;
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  CHECK(o.max_to_keep == CAIRN_KEEP_ALL);
  CHECK(run(comm, capi_test_path("keep_all"), &o, rank, size, 4) == 4);
  /* 0 is the C++ 0: none but the newest, which the manager always keeps */
  o.max_to_keep = 0;
  CHECK(run(comm, capi_test_path("keep_none"), &o, rank, size, 4) == 1);
  o.max_to_keep = 2;
  CHECK(run(comm, capi_test_path("keep_two"), &o, rank, size, 4) == 2);
  {
    cairn_manager* m = NULL;
    o.max_to_keep = -2;
    CHECK_STATUS(cairn_manager_create(comm, capi_test_path("keep_bad"), &o, &m),
                 CAIRN_ERR_INVALID_ARGUMENT, "CAIRN_KEEP_ALL");
  }
}

static void step_names(const cairn_comm* comm, int rank, int size) {
  cairn_manager_options o;
  char path[4096];
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  o.step_prefix = "checkpoint";
  CHECK(run(comm, capi_test_path("standard"), &o, rank, size, 2) == 2);
  snprintf(path, sizeof path, "%s/checkpoint_1", capi_test_path("standard"));
  CHECK(capi_test_is_dir(path));
  o.step_prefix = "ckpt-";
  o.step_name_format = CAIRN_STEP_NAME_JOINED;
  CHECK(run(comm, capi_test_path("joined"), &o, rank, size, 2) == 2);
  snprintf(path, sizeof path, "%s/ckpt-1", capi_test_path("joined"));
  CHECK(capi_test_is_dir(path));
  {
    cairn_manager* m = NULL;
    o.step_name_format = 7;
    CHECK_STATUS(cairn_manager_create(comm, capi_test_path("bad_format"), &o, &m),
                 CAIRN_ERR_INVALID_ARGUMENT, "step_name_format");
  }
}

static void existing_steps_read_only_and_best(const cairn_comm* comm, int rank, int size) {
  cairn_manager_options o;
  cairn_save_options s;
  cairn_manager* m = NULL;
  cairn_tree* tree = NULL;
  double x = 0.0;
  int saved = -1;
  int flag = -1;
  int found = -1;
  int64_t step = -1;
  char path[4096];
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  o.save_root_metadata = 0;
  CHECK_OK(cairn_manager_create(comm, capi_test_path("exists"), &o, &m));
  tree = capi_test_field(&x, rank, size, 1.0);
  CHECK_OK(cairn_manager_save(m, 1, tree, NULL, &saved));
  CHECK(saved == 1);
  CHECK_OK(cairn_manager_wait_until_finished(m));
  /* again: not saved; forced: an error, and step 1 is kept as it was */
  CHECK_OK(cairn_manager_save(m, 1, tree, NULL, &saved));
  CHECK(saved == 0);
  CHECK_OK(cairn_save_options_init(&s, sizeof s));
  s.force = 1;
  CHECK_STATUS(cairn_manager_save(m, 1, tree, &s, &saved), CAIRN_ERR_INVALID_ARGUMENT,
               "already exists");
  /* no best_metric: the best step is the newest */
  CHECK_OK(cairn_manager_best_step(m, &step, &found));
  CHECK(found == 1 && step == 1);
  CHECK_OK(cairn_manager_free(m));
  snprintf(path, sizeof path, "%s/cairn-root.json", capi_test_path("exists"));
  CHECK(!capi_test_is_dir(path) && fopen(path, "r") == NULL); /* save_root_metadata = 0 */

  o.read_only = 1;
  CHECK_OK(cairn_manager_create(comm, capi_test_path("exists"), &o, &m));
  CHECK_OK(cairn_manager_should_save(m, 2, &flag));
  CHECK(flag == 0);
  CHECK_OK(cairn_manager_save(m, 2, tree, NULL, &saved));
  CHECK(saved == 0);
  {
    char* text = NULL;
    CHECK_OK(cairn_manager_root_metadata(m, &text)); /* from the options: no file */
    CHECK(strstr(text, "\"world_size\"") != NULL);
    cairn_free(text);
  }
  CHECK_OK(cairn_manager_free(m));
  /* lightweight_initialize: the steps are listed, their metadata read when needed */
  o.lightweight_initialize = 1;
  CHECK_OK(cairn_manager_create(comm, capi_test_path("exists"), &o, &m));
  CHECK_OK(cairn_manager_latest_step(m, &step, &found));
  CHECK(found == 1 && step == 1);
  {
    char* text = NULL;
    CHECK_OK(cairn_manager_metrics(m, 1, &text));
    CHECK(strcmp(text, "{}") == 0);
    cairn_free(text);
  }
  cairn_tree_free(tree);
}

static void multihost_trailing_slash(const cairn_comm* comm, int rank, int size) {
  cairn_multihost_options o;
  cairn_multihost* mh = NULL;
  cairn_tree* tree = NULL;
  double x = 0.0;
  char base[4096];
  char path[4096];
  CHECK_OK(cairn_multihost_options_init(&o, sizeof o));
  CHECK(o.max_to_keep == 5);
  snprintf(base, sizeof base, "%s/", capi_test_path("mh"));
  CHECK_OK(cairn_multihost_create(comm, base, &o, &mh));
  tree = capi_test_field(&x, rank, size, 3.0);
  CHECK_OK(cairn_multihost_save(mh, 3, tree));
  cairn_multihost_free(mh);
  cairn_tree_free(tree);
  /* "<base>/" and "<base>" name the same per-process directory, with CLU's ckpt-<n> steps */
  snprintf(path, sizeof path, "%s-%d/ckpt-3", capi_test_path("mh"), rank);
  CHECK(capi_test_is_dir(path));
}

int main(int argc, char** argv) {
  capi_test_world w = capi_test_start(&argc, &argv);
  max_to_keep(w.comm, w.rank, w.size);
  step_names(w.comm, w.rank, w.size);
  existing_steps_read_only_and_best(w.comm, w.rank, w.size);
  multihost_trailing_slash(w.comm, w.rank, w.size);
  return capi_test_end(&w, "test_capi_manager_options", NULL);
}
