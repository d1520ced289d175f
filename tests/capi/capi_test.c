/* Helpers of cairn's C tests (see capi_test.h). */
#define _XOPEN_SOURCE 700
#include "capi_test.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char test_dir[4096];
static char test_path[4096];

void capi_test_fail(const char* file, int line, const char* what) {
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  fprintf(stderr, "rank %d: %s:%d: FAILED: %s\n  cairn_last_error: %s\n", rank, file, line, what,
          cairn_last_error());
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

void capi_test_check_status(cairn_status got, cairn_status want, const char* text, const char* file,
                            int line, const char* what) {
  char message[1024];
  if (got != want) {
    snprintf(message, sizeof message, "%s returned %d (%s), expected %d (%s)", what, got,
             cairn_status_name(got), want, cairn_status_name(want));
    capi_test_fail(file, line, message);
  }
  if (strstr(cairn_last_error(), text) == NULL) {
    snprintf(message, sizeof message, "%s: the message does not contain '%s'", what, text);
    capi_test_fail(file, line, message);
  }
}

const char* capi_test_dir(void) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (test_dir[0] != '\0') return test_dir;
  if (rank == 0) {
    strcpy(test_dir, "cairn-capi-test-XXXXXX");
    if (mkdtemp(test_dir) == NULL) capi_test_fail(__FILE__, __LINE__, "mkdtemp");
  }
  MPI_Bcast(test_dir, (int)sizeof test_dir, MPI_CHAR, 0, MPI_COMM_WORLD);
  return test_dir;
}

const char* capi_test_path(const char* name) {
  snprintf(test_path, sizeof test_path, "%s/%s", capi_test_dir(), name);
  return test_path;
}

static int remove_entry(const char* path, const struct stat* info, int flag, struct FTW* ftw) {
  (void)info;
  (void)flag;
  (void)ftw;
  return remove(path);
}

void capi_test_finish(void) {
  int rank = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0 && test_dir[0] != '\0') nftw(test_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  test_dir[0] = '\0';
}

int capi_test_is_dir(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int capi_test_is_file(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

cairn_tree* capi_test_field(double* x, int rank, int size, double value) {
  const int64_t global[1] = {size};
  const int64_t offset[1] = {rank};
  const int64_t extent[1] = {1};
  cairn_tree* tree = NULL;
  *x = value;
  CHECK_OK(cairn_tree_create(&tree));
  CHECK_OK(cairn_tree_add_array(tree, "x", CAIRN_FLOAT64, 1, global, offset, extent, x, 0));
  return tree;
}

capi_test_world capi_test_start(int* argc, char*** argv) {
  capi_test_world world = {NULL, 0, 0};
  int major = -1;
  MPI_Init(argc, argv);
  CHECK(strcmp(cairn_version(&major, NULL, NULL), CAIRN_VERSION_STRING) == 0);
  CHECK(major == CAIRN_VERSION_MAJOR);
  CHECK_OK(cairn_comm_create(MPI_COMM_WORLD, &world.comm));
  CHECK_OK(cairn_comm_rank(world.comm, &world.rank));
  CHECK_OK(cairn_comm_size(world.comm, &world.size));
  capi_test_dir();
  return world;
}

int capi_test_end(capi_test_world* world, const char* name, const char* detail) {
  cairn_comm_free(world->comm);
  world->comm = NULL;
  capi_test_finish();
  if (world->rank == 0) {
    printf("%s: passed on %d ranks%s%s\n", name, world->size, detail != NULL ? " " : "",
           detail != NULL ? detail : "");
  }
  MPI_Finalize();
  return 0;
}

int capi_test_main(int argc, char** argv, const char* program, const capi_test_scenario* scenarios,
                   size_t count) {
  char name[256];
  size_t i;
  int ran = 0;
  capi_test_world world = capi_test_start(&argc, &argv);
  CHECK(argc == 2); /* usage: PROGRAM SCENARIO */
  for (i = 0; i < count; ++i) {
    if (strcmp(argv[1], scenarios[i].name) != 0) continue;
    scenarios[i].run(world.comm, world.rank, world.size);
    ++ran;
  }
  CHECK(ran > 0); /* an unknown scenario name is a failure, not a pass */
  snprintf(name, sizeof name, "%s %s", program, argv[1]);
  return capi_test_end(&world, name, NULL);
}
