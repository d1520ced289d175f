// cairn — cairn-step.json (internal): its names, its format version, how it is made, and the
// validating parser every reader of step metadata goes through.
#pragma once

#include <cairn/checkpointer.hpp>
#include <cairn/handlers.hpp>

#include <boost/json/object.hpp>
#include <cstdint>
#include <filesystem>
#include <string_view>

namespace cairn::checkpoint {

/// Version of the cairn-step.json layout written by this build.
inline constexpr std::int64_t kStepFormatVersion = 1;

/// The keys of cairn-step.json.
namespace step_key {
inline constexpr std::string_view kFormat = "format";
inline constexpr std::string_view kVersion = "version";
inline constexpr std::string_view kHandler = "handler";
inline constexpr std::string_view kWorldSize = "world_size";
inline constexpr std::string_view kBytes = "bytes";
inline constexpr std::string_view kInitTime = "init_time";
inline constexpr std::string_view kCommitTime = "commit_time";
inline constexpr std::string_view kTimings = "timings";
inline constexpr std::string_view kCustom = "custom";
/// Of a composite: item name -> handler type.
inline constexpr std::string_view kItems = CompositeHandler::kItemsKey;
/// Of a composite: item name -> the custom metadata saved with it.
inline constexpr std::string_view kItemCustomMetadata = CompositeHandler::kItemCustomMetadataKey;
}  // namespace step_key

/// The value of "format".
inline constexpr std::string_view kStepFormatName = "cairn-step";

/// Parses the text of a cairn-step.json read from `source` and validates the fields cairn
/// relies on: "format" is "cairn-step", "version" an integer this build reads, "handler" a
/// non-empty string, "world_size" a positive integer, "bytes" a non-negative integer, and
/// "items" (when present) an object of non-empty strings, "item_custom_metadata" (when present)
/// an object of objects. Other fields are kept as they are (StepMetadata::json).
/// Not collective. Throws FormatError naming `source` and the first bad field; never crashes
/// on hostile input.
[[nodiscard]] StepMetadata parse_step_metadata(std::string_view text,
                                               const std::filesystem::path& source);

}  // namespace cairn::checkpoint
