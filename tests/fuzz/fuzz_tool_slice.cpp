// libFuzzer target: the --slice syntax of `cairn dump` (cairn_tool::parse_slice) and how it
// prints elements. The first byte of an input picks the number of dimensions, the next ones
// their extents; the rest is the slice text. Parsing either returns a box inside the shape
// that selects at least one element along every dimension that has one, or throws
// cairn::InvalidArgument; printing any bytes as any dtype never throws.
#include <cairn/dtype.hpp>
#include <cairn/error.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "values.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::size_t dims = data[0] % 5;
  if (size < 1 + dims) return 0;
  std::vector<std::int64_t> shape;
  for (std::size_t d = 0; d < dims; ++d) shape.push_back(data[1 + d] % 17);
  const std::string_view text(reinterpret_cast<const char*>(data + 1 + dims), size - 1 - dims);
  try {
    const cairn::Box box = cairn_tool::parse_slice(text, shape, "leaf");
    if (box.rank() != shape.size()) std::abort();
    for (std::size_t d = 0; d < dims; ++d) {
      // Inside the shape; empty only along a dimension of extent 0 left whole.
      if (box.offset[d] < 0 || box.offset[d] + box.extent[d] > shape[d]) std::abort();
      if (box.extent[d] < 1 && shape[d] != 0) std::abort();
    }
  } catch (const cairn::InvalidArgument&) {
    // A bad slice is refused in words.
  }
  // Any 16 bytes as an element of every dtype: text, JSON and statistics.
  std::byte element[16] = {};
  for (std::size_t i = 0; i < sizeof(element) && i < size; ++i) {
    element[i] = static_cast<std::byte>(data[size - 1 - i]);
  }
  for (const auto dtype : cairn::all_dtypes()) {
    if (cairn_tool::element_text(dtype, element).empty()) std::abort();
    (void)cairn_tool::element_json(dtype, element);
    cairn_tool::Stats stats;
    stats.add(dtype, element, 1);
    (void)stats.json(dtype);
  }
  return 0;
}
