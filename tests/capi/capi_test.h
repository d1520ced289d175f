/* Helpers of cairn's C tests: checks that abort the whole MPI job with a message (so that a
 * failure on one rank fails the test at once instead of leaving the others waiting), and a
 * scratch directory shared by every rank. C99, cairn.h and MPI only. */
#ifndef CAIRN_TESTS_CAPI_TEST_H
#define CAIRN_TESTS_CAPI_TEST_H

#include <cairn/cairn.h>

/* Fails the test: prints "<file>:<line>: <what>" and cairn_last_error(), then MPI_Abort. */
void capi_test_fail(const char* file, int line, const char* what);

/* CHECK(condition): fails the test when the condition is false. */
#define CHECK(condition)                                              \
  do {                                                                \
    if (!(condition)) capi_test_fail(__FILE__, __LINE__, #condition); \
  } while (0)

/* CHECK_OK(call): fails the test when a cairn call does not return CAIRN_OK. */
#define CHECK_OK(call)                                                           \
  do {                                                                           \
    cairn_status check_ok_status_ = (call);                                      \
    if (check_ok_status_ != CAIRN_OK) capi_test_fail(__FILE__, __LINE__, #call); \
  } while (0)

/* CHECK_STATUS(call, status, text): the call fails with `status` and cairn_last_error()
 * contains `text`. */
#define CHECK_STATUS(call, status, text) \
  capi_test_check_status((call), (status), (text), __FILE__, __LINE__, #call)
void capi_test_check_status(cairn_status got, cairn_status want, const char* text, const char* file,
                            int line, const char* what);

/* A fresh directory on every rank's view of the file system (made by rank 0 in the current
 * directory), removed by capi_test_finish(). Collective over MPI_COMM_WORLD. */
const char* capi_test_dir(void);
/* "<capi_test_dir()>/<name>" in a static buffer per call site's use (copy it if needed). */
const char* capi_test_path(const char* name);

/* Removes the scratch directory (rank 0, after a barrier). Collective. */
void capi_test_finish(void);

/* Whether `path` is a directory, a regular file (following links). Local. */
int capi_test_is_dir(const char* path);
int capi_test_is_file(const char* path);

/* A tree of one leaf "x": a field of `size` float64 of which rank `rank` owns element `rank`,
 * viewing *x, set to `value`. The caller frees it. Local. */
cairn_tree* capi_test_field(double* x, int rank, int size, double value);

/* What a test program runs on: the cairn communicator of MPI_COMM_WORLD, its rank and size. */
typedef struct {
  cairn_comm* comm;
  int rank;
  int size;
} capi_test_world;

/* Starts a test program: MPI_Init, checks that the library is the version of cairn.h, the
 * world's communicator, and capi_test_dir(). Collective over MPI_COMM_WORLD. */
capi_test_world capi_test_start(int* argc, char*** argv);
/* Ends it: frees the communicator, capi_test_finish(), prints (rank 0) "<name>: passed on <n>
 * ranks" followed by `detail` when not NULL, then MPI_Finalize. Returns 0, main()'s status.
 * Collective. */
int capi_test_end(capi_test_world* world, const char* name, const char* detail);

/* A named scenario of a test program with one ctest case per scenario. */
typedef struct {
  const char* name;
  void (*run)(const cairn_comm* comm, int rank, int size);
} capi_test_scenario;

/* main() of such a program: runs the scenario that argv[1] names (an unknown or missing name
 * fails the test) between capi_test_start() and capi_test_end(). Collective. */
int capi_test_main(int argc, char** argv, const char* program, const capi_test_scenario* scenarios,
                   size_t count);

#endif
