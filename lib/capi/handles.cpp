// cairn C ABI — conversions between C arguments and C++ values.
#include <boost/json/parse.hpp>
#include <cairn/box.hpp>

#include <array>
#include <cstdlib>
#include <cstring>
#include <new>

#include "capi/handles.hpp"

namespace cairn::capi {
namespace {

// CAIRN_* dtype numbers, in order.
constexpr std::array<DType, 15> kDTypes = {
    DType::boolean,  DType::int8,    DType::int16,   DType::int32,     DType::int64,
    DType::uint8,    DType::uint16,  DType::uint32,  DType::uint64,    DType::float16,
    DType::bfloat16, DType::float32, DType::float64, DType::complex64, DType::complex128};

static_assert(kDTypes[CAIRN_BOOL] == DType::boolean && kDTypes[CAIRN_INT64] == DType::int64 &&
              kDTypes[CAIRN_UINT64] == DType::uint64 && kDTypes[CAIRN_FLOAT64] == DType::float64 &&
              kDTypes[CAIRN_COMPLEX128] == DType::complex128);

}  // namespace

std::string_view text(const char* value, const char* what) {
  if (value == nullptr) throw InvalidArgument(std::string(what) + " is NULL");
  return value;
}

char* copy_out(std::string_view value) {
  auto* copy = static_cast<char*>(std::malloc(value.size() + 1));
  if (copy == nullptr) throw std::bad_alloc();
  std::memcpy(copy, value.data(), value.size());
  copy[value.size()] = '\0';
  return copy;
}

DType dtype_from_c(int dtype) {
  if (dtype < 0 || static_cast<std::size_t>(dtype) >= kDTypes.size()) {
    throw InvalidArgument("unknown dtype " + std::to_string(dtype) +
                          ": use one of CAIRN_BOOL (0) .. CAIRN_COMPLEX128 (14)");
  }
  return kDTypes[static_cast<std::size_t>(dtype)];
}

int dtype_to_c(DType dtype) noexcept {
  for (std::size_t i = 0; i < kDTypes.size(); ++i) {
    if (kDTypes[i] == dtype) return static_cast<int>(i);
  }
  return -1;
}

std::vector<std::int64_t> dims(const std::int64_t* values, int ndim, const char* what) {
  if (ndim < 0 || ndim > CAIRN_MAX_DIMS) {
    throw InvalidArgument("ndim " + std::to_string(ndim) + " is outside 0.." +
                          std::to_string(CAIRN_MAX_DIMS));
  }
  if (ndim == 0) return {};
  if (values == nullptr) {
    throw InvalidArgument(std::string(what) + " is NULL but ndim is " + std::to_string(ndim));
  }
  return {values, values + ndim};
}

std::vector<std::string> strings(const char* const* list, std::size_t count, const char* what) {
  std::vector<std::string> result;
  if (count == 0) return result;
  if (list == nullptr) {
    throw InvalidArgument(std::string(what) + " is NULL but its count is " + std::to_string(count));
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (list[i] == nullptr) {
      throw InvalidArgument(std::string(what) + "[" + std::to_string(i) + "] is NULL");
    }
    result.emplace_back(list[i]);
  }
  return result;
}

boost::json::value parse_json(const char* json_text, const char* what) {
  const std::string_view source = text(json_text, what);
  boost::system::error_code ec;
  boost::json::value value = boost::json::parse(source, ec);
  if (ec) {
    std::string shown(source.substr(0, 80));
    if (source.size() > 80) shown += "...";
    throw InvalidArgument(std::string(what) + " is not valid JSON (" + ec.message() + "): '" +
                          shown + "'");
  }
  return value;
}

ArrayShard shard_from_c(const cairn_array_desc& desc) {
  ArrayShard shard;
  shard.dtype = dtype_from_c(desc.dtype);
  shard.global_shape = dims(desc.global_dims, desc.ndim, "global_dims");
  if (desc.offset != nullptr || desc.local_dims != nullptr) {
    shard.box =
        Box{dims(desc.offset, desc.ndim, "offset"), dims(desc.local_dims, desc.ndim, "local_dims")};
  } else {
    shard.box = whole_box(shard.global_shape);
  }
  if (desc.strides != nullptr) shard.strides = dims(desc.strides, desc.ndim, "strides");
  switch (desc.memory) {
    case CAIRN_MEMORY_HOST: shard.memory = MemoryKind::host; break;
    case CAIRN_MEMORY_CUDA_DEVICE: shard.memory = MemoryKind::cuda_device; break;
    default:
      throw InvalidArgument("unknown memory kind " + std::to_string(desc.memory) +
                            ": use CAIRN_MEMORY_HOST or CAIRN_MEMORY_CUDA_DEVICE");
  }
  shard.data = desc.data;
  shard.replicated = desc.replicated != 0;
  shard.fortran_order = desc.fortran_order != 0;
  return shard;
}

}  // namespace cairn::capi
