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

#endif
