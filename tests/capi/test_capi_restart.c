/* The restart idiom of the C API when the newest checkpoint is damaged:
 * cairn_manager_restore_latest_intact restores the newest step that restores and moves the
 * damaged one aside; a manager is refused on a directory that is a checkpoint. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "capi_test.h"

#define N 64

static double value(int64_t i, int64_t step) { return 1000.0 * (double)step + (double)i; }

/* Flips the byte in the middle of `path` (rank 0's view). */
static void damage(const char* path) {
  FILE* file = fopen(path, "r+b");
  long size;
  int byte;
  CHECK(file != NULL);
  CHECK(fseek(file, 0, SEEK_END) == 0);
  size = ftell(file);
  CHECK(size > 0);
  CHECK(fseek(file, size / 2, SEEK_SET) == 0);
  byte = fgetc(file);
  CHECK(byte != EOF);
  CHECK(fseek(file, size / 2, SEEK_SET) == 0);
  CHECK(fputc(~byte & 0xff, file) != EOF);
  CHECK(fclose(file) == 0);
}

static int exists(const char* path) {
  FILE* file = fopen(path, "rb");
  if (file == NULL) return 0;
  fclose(file);
  return 1;
}

int main(int argc, char** argv) {
  int rank = 0;
  int size = 0;
  int found = -1;
  int64_t step;
  int64_t first;
  int64_t count;
  int64_t i;
  const int64_t n = N;
  double u[N];
  char root[512];
  char path[640];
  cairn_comm* comm = NULL;
  cairn_tree* state = NULL;
  cairn_manager* mgr = NULL;
  cairn_manager_options opts;
  MPI_Init(&argc, &argv);
  CHECK_OK(cairn_comm_create(MPI_COMM_WORLD, &comm));
  CHECK_OK(cairn_comm_rank(comm, &rank));
  CHECK_OK(cairn_comm_size(comm, &size));
  capi_test_dir();
  snprintf(root, sizeof root, "%s", capi_test_path("run"));
  first = n * rank / size;
  count = n * (rank + 1) / size - first;
  CHECK_OK(cairn_tree_create(&state));
  CHECK_OK(cairn_tree_add_array(state, "u", CAIRN_FLOAT64, 1, &n, &first, &count, u, 0));
  CHECK_OK(cairn_manager_options_init(&opts, sizeof opts));
  opts.enable_async = 0;

  /* An empty root: nothing to restore, the target is left alone. */
  CHECK_OK(cairn_manager_create(comm, root, &opts, &mgr));
  for (i = 0; i < count; ++i) u[i] = -1.0;
  CHECK_OK(cairn_manager_restore_latest_intact(mgr, state, NULL, &step, &found));
  CHECK(found == 0);
  CHECK(u[0] == -1.0);
  for (step = 1; step <= 2; ++step) {
    for (i = 0; i < count; ++i) u[i] = value(first + i, step);
    CHECK_OK(cairn_manager_save(mgr, step, state, NULL, NULL));
  }
  CHECK_OK(cairn_manager_free(mgr));

  /* The shard of the last rank in step 2 is damaged: only that rank reads it. */
  if (rank == 0) {
    snprintf(path, sizeof path, "%s/2/shards/p%d.bin", root, size - 1);
    damage(path);
  }
  MPI_Barrier(MPI_COMM_WORLD);

  CHECK_OK(cairn_manager_create(comm, root, &opts, &mgr));
  for (i = 0; i < count; ++i) u[i] = -1.0;
  CHECK_OK(cairn_manager_restore_latest_intact(mgr, state, NULL, &step, &found));
  CHECK(found == 1);
  CHECK(step == 1);
  for (i = 0; i < count; ++i) CHECK(u[i] == value(first + i, 1));
  CHECK_OK(cairn_manager_latest_step(mgr, &step, &found));
  CHECK(found == 1 && step == 1);
  CHECK_OK(cairn_manager_free(mgr));
  MPI_Barrier(MPI_COMM_WORLD);
  snprintf(path, sizeof path, "%s/2.damaged-1/COMMITTED", root);
  CHECK(exists(path));
  snprintf(path, sizeof path, "%s/2/COMMITTED", root);
  CHECK(!exists(path));

  /* A checkpoint is not a root. */
  snprintf(path, sizeof path, "%s/1", root);
  CHECK_STATUS(cairn_manager_create(comm, path, &opts, &mgr), CAIRN_ERR_INVALID_ARGUMENT,
               "is a checkpoint");
  CHECK(mgr == NULL);

  cairn_tree_free(state);
  cairn_comm_free(comm);
  capi_test_finish();
  if (rank == 0) printf("test_capi_restart: passed on %d ranks\n", size);
  MPI_Finalize();
  return 0;
}
