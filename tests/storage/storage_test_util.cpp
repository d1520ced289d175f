#include "storage/storage_test_util.hpp"

#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

namespace cairn::testing {

std::optional<Comm> first_ranks(int n) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm split = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank < n ? 0 : MPI_UNDEFINED, rank, &split);
  if (split == MPI_COMM_NULL) return std::nullopt;
  std::optional<Comm> comm(std::in_place, split);
  MPI_Comm_free(&split);
  return comm;
}

namespace {
std::pair<std::int64_t, std::int64_t> split_range(std::int64_t n, int part, int parts) {
  const std::int64_t begin = n * part / parts;
  const std::int64_t end = n * (part + 1) / parts;
  return {begin, end - begin};
}
}  // namespace

Box slab_box(const std::vector<std::int64_t>& shape, int r, int n) {
  Box box{std::vector<std::int64_t>(shape.size(), 0), shape};
  auto [offset, extent] = split_range(shape[0], r, n);
  box.offset[0] = offset;
  box.extent[0] = extent;
  return box;
}

Box block_box(const std::vector<std::int64_t>& shape, int r, int n) {
  int rows = 1;
  for (int d = 1; d * d <= n; ++d) {
    if (n % d == 0) rows = d;
  }
  const int cols = n / rows;
  Box box{std::vector<std::int64_t>(shape.size(), 0), shape};
  auto [o0, e0] = split_range(shape[0], r / cols, rows);
  auto [o1, e1] = split_range(shape[1], r % cols, cols);
  box.offset[0] = o0;
  box.extent[0] = e0;
  box.offset[1] = o1;
  box.extent[1] = e1;
  return box;
}

void reference_element(DType dtype, std::int64_t i, std::byte* out) {
  const std::size_t size = dtype_size(dtype);
  if (dtype == DType::boolean) {
    out[0] = static_cast<std::byte>((i * 7 + 3) % 3 == 0 ? 1 : 0);
    return;
  }
  std::uint64_t x = static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ULL + size;
  for (std::size_t k = 0; k < size; ++k) {
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ULL;
    out[k] = static_cast<std::byte>(x >> 56);
  }
}

std::vector<std::byte> reference_box(DType dtype, const std::vector<std::int64_t>& shape,
                                     const Box& box) {
  const std::size_t size = dtype_size(dtype);
  const auto n = static_cast<std::size_t>(volume(box));
  std::vector<std::byte> out(n * size);
  const auto global_strides = row_major_strides(shape);
  std::vector<std::int64_t> index(box.rank(), 0);
  for (std::size_t k = 0; k < n; ++k) {
    std::int64_t global = 0;
    for (std::size_t d = 0; d < box.rank(); ++d)
      global += (box.offset[d] + index[d]) * global_strides[d];
    reference_element(dtype, global, out.data() + k * size);
    for (std::size_t d = box.rank(); d-- > 0;) {
      if (++index[d] < box.extent[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

ArrayShard float64_shard(const std::vector<std::byte>& data, const std::vector<std::int64_t>& shape,
                         const Box& box) {
  return ArrayShard{.dtype = DType::float64,
                    .global_shape = shape,
                    .box = box,
                    .data = const_cast<std::byte*>(data.data())};
}

std::vector<StorageFormat> available_formats() {
  std::vector<StorageFormat> formats;
  for (const StorageFormatInfo& format : storage_formats()) {
    if (format.available) formats.push_back(format.format);
  }
  return formats;
}

void flip_byte(const std::filesystem::path& file, std::uint64_t at, std::uint8_t mask) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  const auto offset = static_cast<std::streamoff>(at);
  char byte = 0;
  f.seekg(offset);
  f.get(byte);
  f.seekp(offset);
  f.put(static_cast<char>(byte ^ static_cast<char>(mask)));
  f.flush();
  if (!f) {
    throw std::runtime_error("flipping byte " + std::to_string(at) + " of '" + file.string() +
                             "' failed");
  }
}

}  // namespace cairn::testing
