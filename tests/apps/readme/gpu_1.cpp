// docs/gpu.md's C++ block 1: a leaf in CUDA device memory. Compiled by the build (a block that
// no longer compiles breaks it); run by no test here, since it needs a CUDA device: device
// leaves are covered by the GPU tests (ctest -L gpu).
#include "readme_harness.hpp"

// The block, with the names it uses as parameters.
void add_device_leaf(cairn::ArrayTree& state, void* d_u, std::int64_t ny, std::int64_t nx,
                     const cairn::Box& my_box) {
#include "gpu_1.inc"
}

int main() {
  std::printf(
      "docs/gpu.md block 1 compiles (add_device_leaf at %p); it needs a CUDA device to run\n",
      reinterpret_cast<void*>(&add_device_leaf));
  return 0;
}
