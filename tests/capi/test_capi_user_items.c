/* cairn C ABI — user items: items saved and restored by C callbacks (cairn_items_add_user).
 * The save callback writes a file per rank with the rank and the step; the restore callback
 * reads it back into the caller's struct, which the test compares. A callback that fails on one
 * rank fails the call on every rank, naming the item, and a failed save commits nothing. One
 * ctest case per scenario, at every rank count. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "capi_test.h"

/* What the callbacks of one rank share with the test. */
typedef struct {
  long step;     /* written by a save, set by a restore */
  int rank;      /* set by a restore: the rank the file names */
  int fail_rank; /* the rank whose callback returns 7; -1: none */
  int calls;     /* callbacks made on this rank */
} solver_state;

static void file_of(char* out, size_t size, const char* directory, int rank) {
  snprintf(out, size, "%s/rank%d.txt", directory, rank);
}

static int save_solver(const char* directory, int rank, void* user_data) {
  solver_state* s = (solver_state*)user_data;
  char path[4096];
  FILE* f;
  int ok;
  ++s->calls;
  if (rank == s->fail_rank) return 7;
  file_of(path, sizeof path, directory, rank);
  f = fopen(path, "w");
  if (f == NULL) return 1;
  ok = fprintf(f, "rank %d step %ld\n", rank, s->step) > 0 && fflush(f) == 0 &&
       fsync(fileno(f)) == 0;
  return fclose(f) == 0 && ok ? 0 : 2;
}

static int restore_solver(const char* directory, int rank, void* user_data) {
  solver_state* s = (solver_state*)user_data;
  char path[4096];
  FILE* f;
  int got;
  ++s->calls;
  if (rank == s->fail_rank) return 7;
  file_of(path, sizeof path, directory, rank);
  f = fopen(path, "r");
  if (f == NULL) return 1;
  got = fscanf(f, "rank %d step %ld", &s->rank, &s->step);
  fclose(f);
  return got == 2 ? 0 : 3;
}

static cairn_manager* open_manager(const cairn_comm* comm, const char* name, int async) {
  cairn_manager_options o;
  cairn_manager* m = NULL;
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  o.enable_async = async;
  CHECK_OK(cairn_manager_create(comm, capi_test_path(name), &o, &m));
  return m;
}

/* Restores `step` of the user item "solver" (and nothing else) into a fresh state. */
static solver_state restore_step(cairn_manager* m, long step) {
  solver_state back = {-1, -1, -1, 0};
  cairn_items* items = NULL;
  CHECK_OK(cairn_items_create(&items));
  CHECK_OK(cairn_items_add_user(items, "solver", "app.solver", NULL, restore_solver, &back));
  CHECK_OK(cairn_manager_restore_items(m, step, items, NULL));
  cairn_items_free(items);
  CHECK(back.calls == 1);
  return back;
}

/* Two steps of a user item next to a JSON item, saved asynchronously; each rank reads its own
 * file back, also in a fresh manager; the item's metadata counts one file per rank. */
static void round_trip(const cairn_comm* comm, int rank, int size) {
  solver_state s = {0, rank, -1, 0};
  solver_state back;
  cairn_manager* m = open_manager(comm, "round_trip", 1);
  cairn_items* items = NULL;
  char* text = NULL;
  char files[32];
  long step;
  CHECK_OK(cairn_items_create(&items));
  CHECK_OK(cairn_items_add_user(items, "solver", "app.solver", save_solver, restore_solver, &s));
  CHECK_OK(cairn_items_add_json(items, "config", "{\"dt\": 1}"));
  CHECK_OK(cairn_items_set_metadata(items, "solver", "{\"layout\":\"rank files\"}"));
  for (step = 1; step <= 2; ++step) {
    s.step = 100 + step;
    CHECK_OK(cairn_manager_save_items(m, step, items, NULL, NULL));
    /* the callback ran before the save returned, even in the background save */
    CHECK(s.calls == (int)step);
  }
  CHECK_OK(cairn_manager_wait_until_finished(m));
  cairn_items_free(items);

  back = restore_step(m, 1);
  CHECK(back.rank == rank && back.step == 101);
  CHECK_OK(cairn_manager_item_metadata(m, 2, &text));
  snprintf(files, sizeof files, "\"files\":%d", size);
  if (strstr(text, files) == NULL) fprintf(stderr, "item metadata: %s\n", text);
  CHECK(strstr(text, "app.solver") != NULL && strstr(text, files) != NULL);
  cairn_free(text);
  CHECK_OK(cairn_manager_step_metadata(m, 2, &text));
  CHECK(strstr(text, "\"solver\":\"app.solver\"") != NULL);
  cairn_free(text);
  CHECK_OK(cairn_manager_free(m));

  /* a fresh manager of the root restores the newest step, with the item's custom metadata */
  m = open_manager(comm, "round_trip", 0);
  back = restore_step(m, 2);
  CHECK(back.rank == rank && back.step == 102);
  {
    solver_state other = {-1, -1, -1, 0};
    CHECK_OK(cairn_items_create(&items));
    CHECK_OK(cairn_items_add_user(items, "solver", "app.solver", NULL, restore_solver, &other));
    CHECK_OK(cairn_manager_restore_items(m, 2, items, NULL));
    CHECK_OK(cairn_items_get_metadata(items, "solver", &text));
    CHECK(strcmp(text, "{\"layout\":\"rank files\"}") == 0);
    cairn_free(text);
    cairn_items_free(items);
  }

  /* the wrong type name, a restore-only item saved, no callbacks, a reserved type name */
  CHECK_OK(cairn_items_create(&items));
  CHECK_OK(cairn_items_add_user(items, "solver", "app.other", NULL, restore_solver, &s));
  CHECK_STATUS(cairn_manager_restore_items(m, 2, items, NULL), CAIRN_ERR_INVALID_ARGUMENT,
               "saved by 'app.solver'");
  CHECK_STATUS(cairn_items_add_user(items, "x", "app.solver", NULL, NULL, &s),
               CAIRN_ERR_INVALID_ARGUMENT, "neither");
  CHECK_STATUS(cairn_items_add_user(items, "x", "cairn.bytes", save_solver, NULL, &s),
               CAIRN_ERR_INVALID_ARGUMENT, "cairn.bytes");
  CHECK_STATUS(cairn_items_add_user(items, "solver", "app.solver", save_solver, NULL, &s),
               CAIRN_ERR_INVALID_ARGUMENT, "already added");
  cairn_items_free(items);
  CHECK_OK(cairn_items_create(&items));
  CHECK_OK(cairn_items_add_user(items, "solver", "app.solver", NULL, restore_solver, &s));
  CHECK_STATUS(cairn_manager_save_items(m, 3, items, NULL, NULL), CAIRN_ERR_INVALID_ARGUMENT,
               "no save callback");
  cairn_items_free(items);
  CHECK_OK(cairn_manager_free(m));
}

/* A save callback that fails on the last rank: every rank gets CAIRN_ERR_IO naming the item and
 * the rank, and the step is not committed; the next save succeeds. Sync, then async (where the
 * error may come from the save or from the wait). */
static void failing_save(const cairn_comm* comm, int rank, int size) {
  int async;
  for (async = 0; async <= 1; ++async) {
    solver_state s = {5, rank, size - 1, 0};
    cairn_manager* m = open_manager(comm, async ? "failing_save_async" : "failing_save", async);
    cairn_items* items = NULL;
    char want[96];
    cairn_status status;
    int64_t latest = -1;
    int found = -1;
    char* path = NULL;
    snprintf(want, sizeof want, "returned 7 on rank %d", size - 1);
    CHECK_OK(cairn_items_create(&items));
    CHECK_OK(cairn_items_add_user(items, "solver", "app.solver", save_solver, restore_solver, &s));
    CHECK_OK(cairn_items_add_json(items, "config", "{}"));
    status = cairn_manager_save_items(m, 5, items, NULL, NULL);
    if (status == CAIRN_OK) status = cairn_manager_wait_until_finished(m);
    CHECK_STATUS(status, CAIRN_ERR_IO, want);
    CHECK_STATUS(status, CAIRN_ERR_IO, "item 'solver'");
    CHECK(s.calls == 1);
    CHECK_OK(cairn_manager_latest_step(m, &latest, &found));
    CHECK(found == 0);
    CHECK_OK(cairn_manager_step_path(m, 5, &path));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(!capi_test_is_dir(path));
    cairn_free(path);

    s.fail_rank = -1;
    s.step = 6;
    CHECK_OK(cairn_manager_save_items(m, 6, items, NULL, NULL));
    CHECK_OK(cairn_manager_wait_until_finished(m));
    cairn_items_free(items);
    CHECK(restore_step(m, 6).step == 6);
    CHECK_OK(cairn_manager_latest_step(m, &latest, &found));
    CHECK(found == 1 && latest == 6);
    CHECK_OK(cairn_manager_free(m));
  }
}

/* A restore callback that fails on rank 0 fails the restore on every rank, naming the item. */
static void failing_restore(const cairn_comm* comm, int rank, int size) {
  solver_state s = {9, rank, -1, 0};
  cairn_manager* m = open_manager(comm, "failing_restore", 0);
  cairn_items* items = NULL;
  (void)size;
  CHECK_OK(cairn_items_create(&items));
  CHECK_OK(cairn_items_add_user(items, "solver", "app.solver", save_solver, restore_solver, &s));
  CHECK_OK(cairn_manager_save_items(m, 9, items, NULL, NULL));
  CHECK_OK(cairn_manager_wait_until_finished(m));
  s.fail_rank = 0;
  s.calls = 0;
  CHECK_STATUS(cairn_manager_restore_items(m, 9, items, NULL), CAIRN_ERR_IO,
               "item 'solver' (user type 'app.solver'): the restore callback returned 7 on rank 0");
  CHECK(s.calls == 1);
  cairn_items_free(items);
  CHECK_OK(cairn_manager_free(m));
}

/* A plain checkpointer of composites, synchronous then asynchronous. */
static void checkpointer(const cairn_comm* comm, int rank, int size) {
  int async;
  (void)size;
  for (async = 0; async <= 1; ++async) {
    const char* dir = capi_test_path(async ? "composite_async" : "composite_sync");
    solver_state s = {40 + async, rank, -1, 0};
    solver_state back = {-1, -1, -1, 0};
    cairn_checkpointer* c = NULL;
    cairn_items* items = NULL;
    CHECK_OK(cairn_checkpointer_create_composite(comm, async, &c));
    CHECK_OK(cairn_items_create(&items));
    CHECK_OK(cairn_items_add_user(items, "solver", "app.solver", save_solver, NULL, &s));
    CHECK_OK(cairn_checkpointer_save_items(c, dir, items, NULL));
    CHECK_OK(cairn_checkpointer_wait_until_finished(c));
    cairn_items_free(items);
    CHECK_OK(cairn_items_create(&items));
    CHECK_OK(cairn_items_add_user(items, "solver", "app.solver", NULL, restore_solver, &back));
    CHECK_OK(cairn_checkpointer_restore_items(c, dir, items, NULL));
    CHECK(back.rank == rank && back.step == 40 + async);
    cairn_items_free(items);
    cairn_checkpointer_free(c);
  }
}

int main(int argc, char** argv) {
  static const capi_test_scenario scenarios[] = {{"round_trip", round_trip},
                                                 {"failing_save", failing_save},
                                                 {"failing_restore", failing_restore},
                                                 {"checkpointer", checkpointer}};
  return capi_test_main(argc, argv, "test_capi_user_items", scenarios,
                        sizeof scenarios / sizeof scenarios[0]);
}
