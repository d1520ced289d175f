/* Cross-language checkpoints, C side. `xlang_c save DIR` writes the reference checkpoint
 * (step 1) under DIR; `xlang_c check DIR` restores the one under DIR (written by this program
 * or by the Fortran one, xlang_fortran) into another decomposition and checks every value.
 * The reference checkpoint: "fields/u" float64 [8][6] with u[y][x] = 100 y + x + 1 (split by
 * rows), "n" int32 [3] = {7, 1, -1} and "z" complex128 [2] = {1-1i, 2+0.5i} (replicated),
 * "time" = 0.5 and "name" = "heat". Exits non-zero on any failure. */
#include <cairn/cairn.h>

#include <complex.h>
#include <stdio.h>
#include <string.h>

#include "capi_test.h"

enum { NY = 8, NX = 6 };

static void block(int64_t n, int part, int parts, int64_t* first, int64_t* count) {
  *first = n * part / parts;
  *count = n * (part + 1) / parts - *first;
}

static void save(const cairn_comm* comm, const char* dir, int rank, int size) {
  const int64_t global[2] = {NY, NX};
  int64_t offset[2] = {0, 0};
  int64_t local[2] = {0, NX};
  const int64_t three[1] = {3};
  const int64_t two[1] = {2};
  double u[NY * NX];
  int32_t n[3] = {7, 1, -1};
  double complex z[2];
  const double time = 0.5;
  cairn_manager_options o;
  cairn_save_options s;
  cairn_manager* m = NULL;
  cairn_tree* tree = NULL;
  int64_t y;
  int64_t x;
  z[0] = 1.0 - 1.0 * I;
  z[1] = 2.0 + 0.5 * I;
  block(NY, rank, size, &offset[0], &local[0]);
  for (y = 0; y < local[0]; ++y) {
    for (x = 0; x < NX; ++x) u[y * NX + x] = 100.0 * (double)(offset[0] + y) + (double)x + 1.0;
  }
  CHECK_OK(cairn_tree_create(&tree));
  CHECK_OK(cairn_tree_add_array(tree, "fields/u", CAIRN_FLOAT64, 2, global, offset, local, u, 0));
  CHECK_OK(cairn_tree_add_array(tree, "n", CAIRN_INT32, 1, three, NULL, NULL, n,
                                CAIRN_ARRAY_REPLICATED));
  CHECK_OK(cairn_tree_add_array(tree, "z", CAIRN_COMPLEX128, 1, two, NULL, NULL, z,
                                CAIRN_ARRAY_REPLICATED));
  CHECK_OK(cairn_tree_add_scalar(tree, "time", CAIRN_FLOAT64, &time));
  CHECK_OK(cairn_tree_add_string(tree, "name", "heat"));
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  o.enable_async = 0;
  CHECK_OK(cairn_manager_create(comm, dir, &o, &m));
  {
    /* the checkpoint of an earlier run is replaced: a save never replaces a step */
    const cairn_status deleted = cairn_manager_delete_step(m, 1);
    CHECK(deleted == CAIRN_OK || deleted == CAIRN_ERR_NOT_FOUND);
  }
  CHECK_OK(cairn_save_options_init(&s, sizeof s));
  s.format = CAIRN_FORMAT_POSIX;
  CHECK_OK(cairn_manager_save(m, 1, tree, &s, NULL));
  CHECK_OK(cairn_manager_free(m));
  cairn_tree_free(tree);
}

static void check(const cairn_comm* comm, const char* dir, int rank, int size) {
  const int64_t global[2] = {NY, NX};
  int64_t offset[2] = {0, 0};
  int64_t local[2] = {NY, 0};
  const int64_t three[1] = {3};
  const int64_t two[1] = {2};
  double u[NY * NX];
  int32_t n[3] = {0, 0, 0};
  double complex z[2] = {0, 0};
  double time = 0;
  char* name = NULL;
  cairn_manager_options o;
  cairn_manager* m = NULL;
  cairn_tree* tree = NULL;
  int64_t y;
  int64_t x;
  block(NX, rank, size, &offset[1], &local[1]);
  CHECK_OK(cairn_tree_create(&tree));
  CHECK_OK(cairn_tree_add_array(tree, "fields/u", CAIRN_FLOAT64, 2, global, offset, local, u, 0));
  CHECK_OK(cairn_tree_add_array(tree, "n", CAIRN_INT32, 1, three, NULL, NULL, n, 0));
  CHECK_OK(cairn_tree_add_array(tree, "z", CAIRN_COMPLEX128, 1, two, NULL, NULL, z, 0));
  CHECK_OK(cairn_tree_add_scalar(tree, "time", CAIRN_FLOAT64, &time));
  CHECK_OK(cairn_tree_add_string(tree, "name", ""));
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  o.read_only = 1;
  CHECK_OK(cairn_manager_create(comm, dir, &o, &m));
  CHECK_OK(cairn_manager_restore(m, CAIRN_STEP_LATEST, tree, NULL));
  for (y = 0; y < NY; ++y) {
    for (x = 0; x < local[1]; ++x) {
      CHECK(u[y * local[1] + x] == 100.0 * (double)y + (double)(offset[1] + x) + 1.0);
    }
  }
  CHECK(n[0] == 7 && n[1] == 1 && n[2] == -1);
  CHECK(z[0] == 1.0 - 1.0 * I && z[1] == 2.0 + 0.5 * I);
  CHECK_OK(cairn_tree_get_scalar(tree, "time", CAIRN_FLOAT64, &time));
  CHECK(time == 0.5);
  CHECK_OK(cairn_tree_get_string(tree, "name", &name));
  CHECK(strcmp(name, "heat") == 0);
  cairn_free(name);
  CHECK_OK(cairn_manager_free(m));
  cairn_tree_free(tree);
}

int main(int argc, char** argv) {
  int rank = 0;
  int size = 0;
  cairn_comm* comm = NULL;
  MPI_Init(&argc, &argv);
  if (argc != 3 || (strcmp(argv[1], "save") != 0 && strcmp(argv[1], "check") != 0)) {
    fprintf(stderr, "usage: xlang_c save|check DIR\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  CHECK_OK(cairn_comm_create(MPI_COMM_WORLD, &comm));
  CHECK_OK(cairn_comm_rank(comm, &rank));
  CHECK_OK(cairn_comm_size(comm, &size));
  if (strcmp(argv[1], "save") == 0) {
    save(comm, argv[2], rank, size);
  } else {
    check(comm, argv[2], rank, size);
  }
  cairn_comm_free(comm);
  if (rank == 0) printf("xlang_c %s %s: passed on %d ranks\n", argv[1], argv[2], size);
  MPI_Finalize();
  return 0;
}
