#include "checkpoint/step_metadata.hpp"

#include <boost/json.hpp>
#include <cairn/checkpointer.hpp>
#include <cairn/error.hpp>
#include <fmt/format.h>

#include "base/durable_file.hpp"

namespace cairn::checkpoint {
namespace {

[[noreturn]] void fail(const std::filesystem::path& source, std::string_view field,
                       std::string_view problem) {
  throw FormatError(source.string(), std::string(field),
                    fmt::format("{}: field '{}' {}; the step metadata is damaged or was not "
                                "written by this version of cairn",
                                source.string(), field, problem));
}

const boost::json::value& member(const boost::json::object& o, std::string_view name,
                                 const std::filesystem::path& source) {
  const auto* v = o.if_contains(name);
  if (v == nullptr) fail(source, name, "is missing");
  return *v;
}

std::int64_t integer(const boost::json::object& o, std::string_view name, std::int64_t min,
                     std::int64_t max, const std::filesystem::path& source) {
  const auto& v = member(o, name, source);
  // Boost.JSON keeps integers that fit int64 as int64; larger ones are out of every range.
  if (!v.is_int64() || v.get_int64() < min || v.get_int64() > max) {
    fail(source, name, fmt::format("is not an integer in [{}, {}]", min, max));
  }
  return v.get_int64();
}

}  // namespace

boost::json::object parse_step_metadata(std::string_view text,
                                        const std::filesystem::path& source) {
  boost::system::error_code ec;
  boost::json::parse_options options;
  options.max_depth = 256;
  boost::json::value value = boost::json::parse(text, ec, {}, options);
  if (ec) {
    throw FormatError(source.string(), "json",
                      fmt::format("{} is not valid JSON ({}); the file is damaged or truncated",
                                  source.string(), ec.message()));
  }
  if (!value.is_object()) fail(source, "", "(the whole file) is not a JSON object");
  auto& step = value.get_object();
  const auto& format = member(step, "format", source);
  if (!format.is_string() || format.get_string() != "cairn-step") {
    fail(source, "format", "is not \"cairn-step\"");
  }
  const auto version = integer(step, "version", 1, INT64_MAX, source);
  if (version > kStepFormatVersion) {
    fail(source, "version",
         fmt::format("is {}, newer than the version {} this cairn reads; upgrade cairn", version,
                     kStepFormatVersion));
  }
  const auto& handler = member(step, "handler", source);
  if (!handler.is_string() || handler.get_string().empty()) {
    fail(source, "handler", "is not a non-empty string");
  }
  (void)integer(step, "world_size", 1, 1 << 24, source);
  (void)integer(step, "bytes", 0, INT64_MAX, source);
  if (const auto* items = step.if_contains("items")) {
    if (!items->is_object()) fail(source, "items", "is not an object");
    for (const auto& [name, type] : items->get_object()) {
      if (name.empty() || !type.is_string() || type.get_string().empty()) {
        fail(source, fmt::format("items.{}", std::string_view(name)),
             "is not a non-empty handler name");
      }
    }
  }
  if (const auto* custom = step.if_contains("item_custom_metadata")) {
    if (!custom->is_object()) fail(source, "item_custom_metadata", "is not an object");
    for (const auto& [name, metadata] : custom->get_object()) {
      if (!metadata.is_object()) {
        fail(source, fmt::format("item_custom_metadata.{}", std::string_view(name)),
             "is not an object");
      }
    }
  }
  return std::move(step);
}

}  // namespace cairn::checkpoint

namespace cairn {

boost::json::object read_step_metadata(const std::filesystem::path& dir) {
  const auto file = dir / kStepMetadataFile;
  return checkpoint::parse_step_metadata(base::read_small_file(file), file);
}

}  // namespace cairn
