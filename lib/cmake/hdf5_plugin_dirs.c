/* hdf5_plugin_dirs LIBHDF5...: prints, for each HDF5 library named, the directories it
 * searches for filter plugins when HDF5_PLUGIN_PATH is not set (its compiled-in default), one
 * "library<TAB>directory" line each. Built and run at configure time by
 * CairnHdf5Plugin.cmake; it loads each library with dlopen, so a runtime-only HDF5 (Debian's
 * serial libhdf5, without headers) can be asked too. Exit status 0 when every library
 * answered. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

typedef int (*size_fn)(unsigned*);
typedef ssize_t (*get_fn)(unsigned, char*, size_t);

int main(int argc, char** argv) {
  int status = 0;
  /* HDF5 reads it when its plugin table is first built: without it, the table is the default */
  unsetenv("HDF5_PLUGIN_PATH");
  for (int i = 1; i < argc; ++i) {
    void* lib = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
    size_fn plsize = lib ? (size_fn)dlsym(lib, "H5PLsize") : NULL;
    get_fn plget = lib ? (get_fn)dlsym(lib, "H5PLget") : NULL;
    unsigned n = 0;
    if (!plsize || !plget || plsize(&n) < 0) {
      if (lib) fprintf(stderr, "%s: no H5PLsize or H5PLget\n", argv[i]);
      else fprintf(stderr, "%s\n", dlerror());
      status = 1;
      continue;
    }
    for (unsigned k = 0; k < n; ++k) {
      char dir[4096];
      if (plget(k, dir, sizeof dir) > 0) printf("%s\t%s\n", argv[i], dir);
    }
  }
  return status;
}
