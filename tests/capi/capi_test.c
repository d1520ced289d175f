/* Helpers of cairn's C tests (see capi_test.h). */
#define _XOPEN_SOURCE 700
#include "capi_test.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
