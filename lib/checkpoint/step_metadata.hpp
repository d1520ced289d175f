// cairn — cairn-step.json (internal): its format version and the validating parser every
// reader of step metadata goes through.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <filesystem>
#include <string_view>

namespace cairn::checkpoint {

/// Version of the cairn-step.json layout written by this build.
inline constexpr std::int64_t kStepFormatVersion = 1;

/// Parses the text of a cairn-step.json read from `source` and validates the fields cairn
/// relies on: "format" is "cairn-step", "version" an integer this build reads, "handler" a
/// non-empty string, "world_size" a positive integer, "bytes" a non-negative integer, and
/// "items" (when present) an object of non-empty strings, "item_custom_metadata" (when present)
/// an object of objects. Other fields are kept as they are.
/// Not collective. Throws FormatError naming `source` and the first bad field; never crashes
/// on hostile input.
[[nodiscard]] boost::json::object parse_step_metadata(std::string_view text,
                                                      const std::filesystem::path& source);

}  // namespace cairn::checkpoint
