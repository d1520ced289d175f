// cairn — the one reader of cairn's JSON metadata files (internal): the text of a file cairn
// wrote, parsed with limits on its size and nesting, so that a damaged or hostile file gives
// a FormatError naming it instead of a crash or an unbounded allocation.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string_view>

namespace cairn::base {

/// How large and how deeply nested a metadata file may be.
struct JsonLimits {
  /// Nesting depth of arrays and objects.
  std::size_t max_depth = 64;
  /// Bytes of text.
  std::uint64_t max_bytes = std::uint64_t{1} << 30;
};

/// Parses `text`, read from `source`, as one JSON value within `limits`. Not collective.
/// Throws FormatError naming `source` (field "json") when the text is too large, not valid
/// JSON or nested too deeply.
[[nodiscard]] boost::json::value parse_json(std::string_view text,
                                            const std::filesystem::path& source,
                                            JsonLimits limits = {});

}  // namespace cairn::base
