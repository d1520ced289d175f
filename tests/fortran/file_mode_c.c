/* The permission bits of a file, for test_fortran_manager_callbacks.f90 (Fortran has no stat). */
#include <sys/stat.h>

/* The permission bits (st_mode & 07777) of `path`, or -1 when it cannot be read. */
int fortran_test_file_mode(const char* path) {
  struct stat st;
  if (stat(path, &st) != 0) return -1;
  return (int)(st.st_mode & 07777);
}
