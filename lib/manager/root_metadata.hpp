// cairn — cairn-root.json (internal): what the manager writes once per root, and the
// validating parser every reader of it goes through.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace cairn::manager {

/// Version of the cairn-root.json layout written by this build.
inline constexpr std::int64_t kRootFormatVersion = 1;

/// The root metadata of a root created with `step_prefix` and the step name format described
/// by `step_name_format` (StepNameFormat::describe()) by `world_size` ranks, with the caller's
/// `user` metadata.
[[nodiscard]] boost::json::object make_root_metadata(const std::string& step_prefix,
                                                     const std::string& step_name_format,
                                                     int world_size,
                                                     const boost::json::object& user);

/// Parses the text of a cairn-root.json read from `source` and validates it: "format" is
/// "cairn-root", "version" an integer this build reads, "step_prefix" a string without '/',
/// "world_size" a positive integer, "step_name_format" (absent in roots whose steps are named
/// `<step_prefix><step>`) a string. Not collective. Throws FormatError naming `source` and
/// the first bad field; never crashes on hostile input.
[[nodiscard]] boost::json::object parse_root_metadata(std::string_view text,
                                                      const std::filesystem::path& source);

}  // namespace cairn::manager
