#include "manager/root_metadata.hpp"

#include <boost/json.hpp>
#include <cairn/checkpoint_root.hpp>
#include <cairn/error.hpp>
#include <fmt/format.h>

#include "base/durable_file.hpp"
#include "base/json_read.hpp"
#include "manager/step_dirs.hpp"

namespace cairn::manager {
namespace {

[[noreturn]] void fail(const std::filesystem::path& source, std::string_view field,
                       std::string_view problem) {
  throw FormatError(source.string(), std::string(field),
                    fmt::format("{}: field '{}' {}; the root metadata is damaged or was not "
                                "written by this version of cairn",
                                source.string(), field, problem));
}

std::int64_t integer(const boost::json::object& o, std::string_view name, std::int64_t min,
                     std::int64_t max, const std::filesystem::path& source) {
  const auto* v = o.if_contains(name);
  if (v == nullptr) fail(source, name, "is missing");
  if (!v->is_int64() || v->get_int64() < min || v->get_int64() > max) {
    fail(source, name, fmt::format("is not an integer in [{}, {}]", min, max));
  }
  return v->get_int64();
}

}  // namespace

boost::json::object make_root_metadata(const std::string& step_prefix,
                                       const std::string& step_name_format, int world_size,
                                       const boost::json::object& user) {
  return {{"format", "cairn-root"},     {"version", kRootFormatVersion},
          {"step_prefix", step_prefix}, {"step_name_format", step_name_format},
          {"world_size", world_size},   {"user", user}};
}

boost::json::object parse_root_metadata(std::string_view text,
                                        const std::filesystem::path& source) {
  boost::json::value value = base::parse_json(text, source);
  if (!value.is_object()) fail(source, "", "(the whole file) is not a JSON object");
  auto& root = value.get_object();
  const auto* format = root.if_contains("format");
  if (format == nullptr || !format->is_string() || format->get_string() != "cairn-root") {
    fail(source, "format", "is not \"cairn-root\"");
  }
  const auto version = integer(root, "version", 1, INT64_MAX, source);
  if (version > kRootFormatVersion) {
    fail(source, "version",
         fmt::format("is {}, newer than the version {} this cairn reads; upgrade cairn", version,
                     kRootFormatVersion));
  }
  const auto* prefix = root.if_contains("step_prefix");
  if (prefix == nullptr || !prefix->is_string() ||
      prefix->get_string().find('/') != boost::json::string::npos) {
    fail(source, "step_prefix", "is not a string without '/'");
  }
  (void)integer(root, "world_size", 1, 1 << 24, source);
  // Absent in roots whose steps are named <step_prefix><step>.
  if (const auto* format = root.if_contains("step_name_format");
      format != nullptr && !format->is_string()) {
    fail(source, "step_name_format", "is not a string");
  }
  // Written by every manager of this version; a root of an earlier one has none.
  if (const auto* user = root.if_contains("user"); user != nullptr && !user->is_object()) {
    fail(source, "user", "is not a JSON object");
  }
  return std::move(root);
}

}  // namespace cairn::manager

namespace cairn {

boost::json::object read_root_metadata(const std::filesystem::path& root) {
  const auto file = root / manager::kRootMetadataFile;
  return manager::parse_root_metadata(base::read_small_file(file), file);
}

}  // namespace cairn
