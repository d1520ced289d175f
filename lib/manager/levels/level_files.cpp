#include "manager/levels/level_files.hpp"

#include <boost/json.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "base/durable_file.hpp"
#include "base/log.hpp"
#include "manager/levels/local_level.hpp"

namespace cairn::levels {
namespace {

constexpr std::string_view kCadenceFormat = "cairn-level-cadence";
constexpr std::int64_t kCadenceVersion = 1;
// The "format" of a step record (local_level.cpp writes them).
constexpr std::string_view kRecordFormat = "cairn-level";

std::filesystem::path cadence_path(const std::filesystem::path& directory) {
  return directory / kLevelFolder / kCadenceFile;
}

std::string describe_sizes(const std::vector<int>& sizes) {
  std::string out;
  for (const int n : sizes) out += fmt::format("{}{}", out.empty() ? "" : ", ", n);
  return out;
}

}  // namespace

std::int64_t counted_local_saves(const Comm& world, const NodeLayout& layout,
                                 const std::filesystem::path& directory) {
  std::int64_t mine = 0;
  if (layout.leader()) {
    try {
      const boost::json::value json =
          boost::json::parse(base::read_small_file(cadence_path(directory), 64 * 1024));
      const auto& object = json.as_object();
      if (object.at("format").as_string() == kCadenceFormat) {
        mine = std::max<std::int64_t>(0, object.at("local_saves").to_number<std::int64_t>());
      }
    } catch (const std::exception&) {
      mine = 0;  // missing (a new or wiped node) or damaged: the other nodes count
    }
  }
  const auto all = world.allgather(mine);
  return *std::max_element(all.begin(), all.end());
}

void count_local_saves(const NodeLayout& layout, const std::filesystem::path& directory,
                       std::int64_t local_saves, std::int64_t step) noexcept {
  if (!layout.leader()) return;
  const auto file = cadence_path(directory);
  try {
    const boost::json::object cadence{{"format", kCadenceFormat},
                                      {"version", kCadenceVersion},
                                      {"local_saves", local_saves},
                                      {"step", step}};
    // Written aside and renamed: a reader finds the previous count or this one, never a cut.
    const auto tmp = file.string() + ".tmp";
    base::write_file_durably(tmp, boost::json::serialize(cadence));
    std::filesystem::rename(tmp, file);
    base::sync_directory(file.parent_path());
  } catch (const std::exception& e) {
    base::log::warn("level.cadence_unwritten", "path=\"{}\" step={} error=\"{}\"", file.string(),
                    step, e.what());
  }
}

std::string newest_step_of_another_layout(const Comm& world, const NodeLayout& layout,
                                          const std::filesystem::path& directory,
                                          const StepNameFormat& naming, std::int64_t newer_than) {
  // [step, world size, node sizes...] of this node's newest record of another layout.
  boost::json::array mine;
  if (layout.leader()) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(directory / kLevelFolder, ec)) {
      const auto path = entry.path();
      if (path.extension() != ".json") continue;
      const auto step = naming.parse_name(path.stem().string());
      if (!step || *step <= newer_than || (!mine.empty() && mine.at(0).as_int64() >= *step)) {
        continue;
      }
      try {
        const boost::json::value json = boost::json::parse(base::read_small_file(path, 64 * 1024));
        const auto& record = json.as_object();
        if (record.at("format").as_string() != kRecordFormat ||
            record.at("step").to_number<std::int64_t>() != *step) {
          continue;
        }
        std::vector<int> sizes;
        for (const auto& n : record.at("node_sizes").as_array()) {
          sizes.push_back(n.to_number<int>());
        }
        if (record.at("world_size").to_number<int>() == world.size() &&
            sizes == layout.node_sizes) {
          continue;  // this job's layout: not what this function reports
        }
        boost::json::array found{*step, record.at("world_size").to_number<int>()};
        for (const int n : sizes) found.emplace_back(n);
        mine = std::move(found);
      } catch (const std::exception&) {
        continue;  // a damaged record says nothing
      }
    }
  }
  std::optional<boost::json::array> newest;
  for (const auto& node : world.allgather_json(mine)) {
    const auto& found = node.as_array();
    if (found.empty()) continue;
    if (!newest || found.at(0).as_int64() > newest->at(0).as_int64()) newest = found;
  }
  if (!newest) return {};
  std::vector<int> sizes;
  for (std::size_t i = 2; i < newest->size(); ++i) sizes.push_back(newest->at(i).to_number<int>());
  return fmt::format("step {}, saved by {} ranks as {} node{} of {} rank{}",
                     newest->at(0).as_int64(), newest->at(1).as_int64(), sizes.size(),
                     sizes.size() == 1 ? "" : "s", describe_sizes(sizes),
                     sizes.size() == 1 && sizes[0] == 1 ? "" : "s");
}

}  // namespace cairn::levels
