/* cairn_set_error_mode: with CAIRN_ERRORS_RETURN (the default) a failing call returns its
 * status; with CAIRN_ERRORS_FATAL it prints its message with the rank and aborts the job.
 *   test_capi_error_mode return   passes (exit 0) when failures return, and modes are checked
 *   test_capi_error_mode fatal    the last rank makes a failing call in CAIRN_ERRORS_FATAL: the
 *                                 job must abort with "cairn (rank <last>): ..." on stderr
 *                                 before any rank prints "not aborted" (error_mode_test.sh
 *                                 judges that) */
#include <cairn/cairn.h>

#include <stdio.h>
#include <string.h>

#include "capi_test.h"

static void failures_return(const cairn_comm* comm, int rank, int size) {
  (void)comm;
  (void)rank;
  (void)size;
  CHECK_STATUS(cairn_tree_add_array(NULL, "u", CAIRN_FLOAT64, 0, NULL, NULL, NULL, NULL, 0),
               CAIRN_ERR_INVALID_ARGUMENT, "cairn_tree_add_array: tree is NULL");
  CHECK_STATUS(cairn_set_error_mode(2), CAIRN_ERR_INVALID_ARGUMENT,
               "cairn_set_error_mode: mode 2 is neither");
  CHECK_OK(cairn_set_error_mode(CAIRN_ERRORS_FATAL));
  CHECK_OK(cairn_set_error_mode(CAIRN_ERRORS_RETURN));
  CHECK_STATUS(cairn_tree_create(NULL), CAIRN_ERR_INVALID_ARGUMENT, "out (output) is NULL");
  /* A failure found by a wrapper: recorded as it was given. */
  CHECK(cairn_report_error(CAIRN_ERR_IO, "my_wrapper: disk full") == CAIRN_ERR_IO);
  CHECK(strcmp(cairn_last_error(), "my_wrapper: disk full") == 0);
  CHECK(cairn_report_error(CAIRN_OK, "nothing") == CAIRN_OK);
  CHECK(strcmp(cairn_last_error(), "my_wrapper: disk full") == 0);
}

static void failure_aborts(const cairn_comm* comm, int rank, int size) {
  (void)comm;
  CHECK_OK(cairn_set_error_mode(CAIRN_ERRORS_FATAL));
  if (rank == size - 1) {
    cairn_tree_add_array(NULL, "u", CAIRN_FLOAT64, 0, NULL, NULL, NULL, NULL, 0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  printf("rank %d: not aborted\n", rank);
  fflush(stdout);
}

int main(int argc, char** argv) {
  static const capi_test_scenario scenarios[] = {{"return", failures_return},
                                                 {"fatal", failure_aborts}};
  return capi_test_main(argc, argv, "test_capi_error_mode", scenarios,
                        sizeof scenarios / sizeof scenarios[0]);
}
