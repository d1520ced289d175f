#include "gpu_test_util.hpp"

#include <cuda_runtime_api.h>

#include <stdexcept>

#include "support/test_support.hpp"

namespace cairn::testing {
namespace {

void check(cudaError_t rc, const char* call) {
  if (rc != cudaSuccess) {
    throw std::runtime_error(std::string(call) + ": " + cudaGetErrorString(rc));
  }
}

}  // namespace

std::optional<std::string> no_cuda_device() {
  static const std::optional<std::string> why = []() -> std::optional<std::string> {
    int count = 0;
    const cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess) return std::string(cudaGetErrorString(rc));
    if (count == 0) return std::string("cudaGetDeviceCount found 0 devices");
    const cudaError_t set = cudaSetDevice(world_rank() % count);
    if (set != cudaSuccess) return std::string(cudaGetErrorString(set));
    return std::nullopt;
  }();
  return why;
}

DeviceArray::DeviceArray(std::size_t bytes) : size_(bytes) {
  if (bytes > 0) check(cudaMalloc(&data_, bytes), "cudaMalloc");
}

DeviceArray::~DeviceArray() {
  if (data_) (void)cudaFree(data_);
}

void DeviceArray::upload(const std::vector<std::byte>& bytes) {
  if (bytes.size() != size_) throw std::invalid_argument("DeviceArray::upload: wrong size");
  if (size_ > 0) check(cudaMemcpy(data_, bytes.data(), size_, cudaMemcpyHostToDevice), "upload");
}

std::vector<std::byte> DeviceArray::download() const {
  std::vector<std::byte> out(size_);
  if (size_ > 0) check(cudaMemcpy(out.data(), data_, size_, cudaMemcpyDeviceToHost), "download");
  return out;
}

void DeviceArray::fill(unsigned char value) {
  if (size_ > 0) check(cudaMemset(data_, value, size_), "cudaMemset");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

}  // namespace cairn::testing
