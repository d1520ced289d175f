#include "checkpoint/step_metadata.hpp"

#include <boost/json.hpp>
#include <cairn/checkpointer.hpp>
#include <cairn/error.hpp>
#include <fmt/format.h>

#include <map>
#include <string>

#include "base/durable_file.hpp"
#include "base/json_read.hpp"

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

// The fields of a composite, checked.
std::map<std::string, std::string> items_of(const boost::json::object& step,
                                            const std::filesystem::path& source) {
  std::map<std::string, std::string> out;
  if (const auto* items = step.if_contains(step_key::kItems)) {
    if (!items->is_object()) fail(source, step_key::kItems, "is not an object");
    for (const auto& [name, type] : items->get_object()) {
      if (name.empty() || !type.is_string() || type.get_string().empty()) {
        fail(source, fmt::format("{}.{}", step_key::kItems, std::string_view(name)),
             "is not a non-empty handler name");
      }
      out.emplace(std::string(name), std::string(type.get_string()));
    }
  }
  if (const auto* custom = step.if_contains(step_key::kItemCustomMetadata)) {
    if (!custom->is_object()) fail(source, step_key::kItemCustomMetadata, "is not an object");
    for (const auto& [name, metadata] : custom->get_object()) {
      if (!metadata.is_object()) {
        fail(source, fmt::format("{}.{}", step_key::kItemCustomMetadata, std::string_view(name)),
             "is not an object");
      }
    }
  }
  return out;
}

std::string string_or_empty(const boost::json::object& step, std::string_view key) {
  const auto* v = step.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

}  // namespace

StepMetadata parse_step_metadata(std::string_view text, const std::filesystem::path& source) {
  boost::json::value value = base::parse_json(text, source, {.max_depth = 256});
  if (!value.is_object()) fail(source, "", "(the whole file) is not a JSON object");
  auto& step = value.get_object();
  const auto& format = member(step, step_key::kFormat, source);
  if (!format.is_string() || format.get_string() != kStepFormatName) {
    fail(source, step_key::kFormat, "is not \"cairn-step\"");
  }
  const auto version = integer(step, step_key::kVersion, 1, INT64_MAX, source);
  if (version > kStepFormatVersion) {
    fail(source, step_key::kVersion,
         fmt::format("is {}, newer than the version {} this cairn reads; upgrade cairn", version,
                     kStepFormatVersion));
  }
  const auto& handler = member(step, step_key::kHandler, source);
  if (!handler.is_string() || handler.get_string().empty()) {
    fail(source, step_key::kHandler, "is not a non-empty string");
  }
  StepMetadata out{
      .handler = std::string(handler.get_string()),
      .world_size = static_cast<int>(integer(step, step_key::kWorldSize, 1, 1 << 24, source)),
      .bytes = static_cast<std::uint64_t>(integer(step, step_key::kBytes, 0, INT64_MAX, source)),
      .init_time = string_or_empty(step, step_key::kInitTime),
      .commit_time = string_or_empty(step, step_key::kCommitTime),
      .items = items_of(step, source)};
  if (const auto* custom = step.if_contains(step_key::kCustom)) out.custom = *custom;
  out.json = std::move(step);
  return out;
}

}  // namespace cairn::checkpoint

namespace cairn {

StepMetadata StepMetadata::read(const std::filesystem::path& dir) {
  const auto file = dir / kStepMetadataFile;
  return checkpoint::parse_step_metadata(base::read_small_file(file), file);
}

boost::json::object read_step_metadata(const std::filesystem::path& dir) {
  return StepMetadata::read(dir).json;
}

}  // namespace cairn
