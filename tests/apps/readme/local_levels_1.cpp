// docs/local-levels.md's C++ block 1: a manager with a node-local level. Compiled by the build
// (a block that no longer compiles breaks it); run by no test here, since its paths are a
// cluster's (/scratch, /dev/shm): the levels run in apps.restart.levels and
// tests/manager/test_levels.cpp.
#include "readme_harness.hpp"

// The block, with the names it uses as parameters.
void open_manager_with_local_level(cairn::Comm& comm) {
#include "local_levels_1.inc"
}

int main() {
  std::printf("docs/local-levels.md block 1 compiles (at %p); its paths are a cluster's\n",
              reinterpret_cast<void*>(&open_manager_with_local_level));
  return 0;
}
