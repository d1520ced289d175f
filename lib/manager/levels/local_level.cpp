#include "manager/levels/local_level.hpp"

#include <boost/json.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <random>
#include <set>

#include "base/durable_file.hpp"
#include "base/fault.hpp"
#include "base/log.hpp"
#include "manager/levels/file_map.hpp"
#include "manager/levels/step_archive.hpp"
#include "manager/step_dirs.hpp"

namespace cairn::levels {
namespace {

constexpr std::string_view kRecordFormat = "cairn-level";
constexpr std::int64_t kRecordVersion = 1;
// The field of a node directory's cairn-root.json that names the root it serves.
constexpr std::string_view kPersistentRootField = "persistent_root";

std::string hex(std::uint64_t value) { return fmt::format("{:016x}", value); }

}  // namespace

std::filesystem::path node_directory(const std::filesystem::path& directory, int node) {
  std::string text = directory.string();
  const std::string number = std::to_string(node);
  for (auto at = text.find("{node}"); at != std::string::npos; at = text.find("{node}", at)) {
    text.replace(at, 6, number);
    at += number.size();
  }
  return text;
}

Redundancy scheme_of(const LocalRedundancy& redundancy, int nodes) {
  switch (redundancy.kind) {
    case LocalRedundancy::Kind::none: return {};
    case LocalRedundancy::Kind::partner:
      if (nodes < 2 || redundancy.partner_distance < 1 || redundancy.partner_distance >= nodes) {
        throw InvalidArgument(fmt::format(
            "local level: redundancy partner_distance {} needs 1 <= distance < nodes ({} node{})",
            redundancy.partner_distance, nodes, nodes == 1 ? "" : "s"));
      }
      return {.kind = RedundancyKind::partner, .partner_distance = redundancy.partner_distance};
    case LocalRedundancy::Kind::xor_parity:
      if (nodes < 2 || redundancy.xor_group < 2) {
        throw InvalidArgument(fmt::format(
            "local level: redundancy xor group {} needs a group of at least 2 and at least 2 "
            "nodes ({} node{})",
            redundancy.xor_group, nodes, nodes == 1 ? "" : "s"));
      }
      return {.kind = RedundancyKind::xor_parity, .xor_group = redundancy.xor_group};
  }
  throw InvalidArgument("local level: unknown redundancy kind");
}

LocalLevel::LocalLevel(const Comm& world, LocalLevelOptions options, StepNameFormatPtr naming,
                       CheckpointerOptions checkpointer, boost::json::object root_metadata,
                       const std::filesystem::path& persistent_root)
    : world_(world),
      options_(std::move(options)),
      naming_(std::move(naming)),
      checkpointer_options_(std::move(checkpointer)) {
  if (options_.directory.empty()) {
    throw InvalidArgument("local level: the local directory is empty");
  }
  if (options_.keep < 1) {
    throw InvalidArgument(fmt::format("local level: keep {} is below 1", options_.keep));
  }
  if (options_.persistent_every < 0) {
    throw InvalidArgument(
        fmt::format("local level: persistent_every {} is negative", options_.persistent_every));
  }
  // Ranks that configured the level differently fail here, naming the rank, not in an
  // exchange of copies that would wait for a partner that does not come.
  world_.agree({.operation = "local level: " + options_.redundancy.describe(),
                .options = static_cast<std::uint64_t>(options_.keep) << 32 |
                           static_cast<std::uint64_t>(options_.persistent_every & 0xffffffff)});
  const int per_node = requested_ranks_per_node(options_.ranks_per_node);
  layout_ = split_nodes(world_, per_node);
  scheme_ = scheme_of(options_.redundancy, layout_.nodes);
  directory_ = node_directory(options_.directory, layout_.node);
  // Nodes must not share a directory: each leader leaves a token of this job there and looks
  // for another node's.
  const std::string token =
      world_.broadcast(hex(std::random_device{}()) + hex(std::random_device{}()));
  const auto probe = directory_ / kLevelFolder / fmt::format("node-{}.probe", layout_.node);
  world_.run_all(fmt::format("local level: opening '{}':", directory_.string()), [&] {
    if (!layout_.leader()) return;
    base::create_directories(directory_ / kLevelFolder);
    const auto root_file = directory_ / manager::kRootMetadataFile;
    // A local directory serves one persistent root: another root's local steps are neither
    // restored nor removed by this manager. A file that cannot be read whole (being written by
    // another node that shares the directory, which the check below refuses, or cut by a
    // crash) is written again.
    std::optional<std::string> owner;
    bool readable = false;
    try {
      const boost::json::value held = boost::json::parse(base::read_small_file(root_file, 1 << 20));
      readable = held.is_object();
      const auto* field = readable ? held.as_object().if_contains(kPersistentRootField) : nullptr;
      if (field != nullptr && field->is_string()) owner = std::string(field->as_string());
    } catch (const std::exception&) {
      readable = false;
    }
    if (owner && *owner != persistent_root.string()) {
      throw InvalidArgument(fmt::format(
          "local level: '{}' holds the local steps of the root '{}', not of this manager's "
          "root '{}'; give each root a local directory of its own (e.g. with the job or run "
          "name in the path), or remove that one",
          directory_.string(), *owner, persistent_root.string()));
    }
    if (!readable) {
      root_metadata["world_size"] = layout_.node_sizes.at(static_cast<std::size_t>(layout_.node));
      root_metadata[kPersistentRootField] = persistent_root.string();
      // Written aside and renamed, so that a reader never sees it cut.
      const auto tmp =
          directory_ / fmt::format("{}.node-{}.tmp", manager::kRootMetadataFile, layout_.node);
      base::write_file_durably(tmp, boost::json::serialize(root_metadata));
      std::filesystem::rename(tmp, root_file);
      base::sync_directory(directory_);
    }
    base::write_file_durably(probe, token);
  });
  world_.run_all(fmt::format("local level: checking '{}':", directory_.string()), [&] {
    if (!layout_.leader()) return;
    for (const auto& entry : std::filesystem::directory_iterator(directory_ / kLevelFolder)) {
      const auto name = entry.path().filename().string();
      if (entry.path() == probe || !name.starts_with("node-") || !name.ends_with(".probe")) {
        continue;
      }
      std::string text;
      try {
        text = base::read_small_file(entry.path(), 1024);
      } catch (const Error&) {
        continue;
      }
      if (text == token) {
        throw InvalidArgument(fmt::format(
            "local level: node {} and another node share the local directory '{}' ({}); give "
            "each node its own, e.g. with {{node}} in the path",
            layout_.node, directory_.string(), name));
      }
    }
  });
  if (layout_.leader()) {
    std::error_code ec;
    std::filesystem::remove(probe, ec);
  }
  base::log::info("level.local", "directory=\"{}\" nodes=\"{}\" redundancy=\"{}\" keep={}",
                  directory_.string(), layout_.describe(), options_.redundancy.describe(),
                  options_.keep);
  scan();
}

std::filesystem::path LocalLevel::step_dir(std::int64_t step) const {
  return directory_ / naming_->build_name(step);
}

std::filesystem::path LocalLevel::record_path(std::int64_t step) const {
  return directory_ / kLevelFolder / (naming_->build_name(step) + ".json");
}

std::filesystem::path LocalLevel::copy_path(std::int64_t step) const {
  return directory_ / kLevelFolder / (naming_->build_name(step) + ".copy");
}

bool LocalLevel::has(std::int64_t step) const noexcept {
  return std::binary_search(steps_.begin(), steps_.end(), step);
}

std::optional<std::chrono::system_clock::time_point> LocalLevel::time_of(std::int64_t step) const {
  const auto it = times_.find(step);
  if (it == times_.end()) return std::nullopt;
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::nanoseconds(it->second)));
}

void LocalLevel::write_record(std::int64_t step, std::optional<std::uint64_t> archive_xxh3,
                              std::chrono::system_clock::time_point time) const {
  boost::json::array sizes;
  for (const int n : layout_.node_sizes) sizes.emplace_back(n);
  boost::json::object record{
      {"format", kRecordFormat},
      {"version", kRecordVersion},
      {"step", step},
      {"world_size", world_.size()},
      {"node", layout_.node},
      {"node_sizes", std::move(sizes)},
      {"redundancy", options_.redundancy.describe()},
      {"time_ns",
       std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch()).count()}};
  if (archive_xxh3) record["archive_xxh3"] = hex(*archive_xxh3);
  base::write_file_durably(record_path(step), boost::json::serialize(record));
}

std::optional<LocalLevel::Record> LocalLevel::read_record(std::int64_t step) const {
  try {
    const auto text = base::read_small_file(record_path(step), 64 * 1024);
    const boost::json::value json = boost::json::parse(text);
    const auto& object = json.as_object();
    if (object.at("format").as_string() != kRecordFormat ||
        object.at("step").to_number<std::int64_t>() != step ||
        object.at("world_size").to_number<int>() != world_.size() ||
        object.at("node").to_number<int>() != layout_.node) {
      return std::nullopt;
    }
    std::vector<int> sizes;
    for (const auto& n : object.at("node_sizes").as_array()) sizes.push_back(n.to_number<int>());
    if (sizes != layout_.node_sizes) return std::nullopt;
    Record record{.step = step,
                  .archive_xxh3 = std::nullopt,
                  .time_ns = object.at("time_ns").to_number<std::int64_t>()};
    if (const auto* sum = object.if_contains("archive_xxh3")) {
      record.archive_xxh3 = std::stoull(std::string(sum->as_string()), nullptr, 16);
    }
    return record;
  } catch (const std::exception&) {
    return std::nullopt;  // missing or damaged: the node does not hold the step
  }
}

void LocalLevel::scan() {
  boost::json::array mine;
  world_.run_all(fmt::format("local level: listing '{}':", directory_.string()), [&] {
    if (!layout_.leader()) return;
    for (const auto& entry : std::filesystem::directory_iterator(directory_ / kLevelFolder)) {
      const auto path = entry.path();
      if (path.extension() != ".json") continue;
      const auto step = naming_->parse_name(path.stem().string());
      if (!step) continue;
      if (const auto record = read_record(*step)) {
        mine.push_back(boost::json::array{record->step, record->time_ns});
      }
    }
  });
  std::set<std::int64_t> steps;
  times_.clear();
  for (const auto& node : world_.allgather_json(mine)) {
    for (const auto& entry : node.as_array()) {
      const auto step = entry.as_array().at(0).to_number<std::int64_t>();
      steps.insert(step);
      times_[step] = std::max(times_[step], entry.as_array().at(1).to_number<std::int64_t>());
    }
  }
  steps_.assign(steps.begin(), steps.end());
}

void LocalLevel::ensure_checkpointer(const std::shared_ptr<CheckpointHandler>& handler) {
  if (checkpointer_ && checkpointer_->handler() == handler) return;
  // Duplicating the node's communicator has no deadline: agree on the world first.
  world_.agree({.operation = "local level: creating the node's checkpointer"});
  checkpointer_ =
      std::make_unique<Checkpointer>(*layout_.node_comm, handler, checkpointer_options_);
}

void LocalLevel::save(std::int64_t step, const std::shared_ptr<CheckpointHandler>& handler,
                      const CheckpointArgs& args, const CheckpointSaveOptions& options,
                      std::chrono::system_clock::time_point time) {
  ensure_checkpointer(handler);
  const auto dir = step_dir(step);
  CheckpointSaveOptions local = options;
  local.force = true;  // a part left by a save that never counted is replaced
  local.incremental_base.clear();
  bool saved = false;
  try {
    world_.run_all(fmt::format("local save of step {}:", step), [&] {
      base::fault::point("level.local_save");
      checkpointer_->save(dir, args, local);
      saved = true;
    });
    std::optional<std::uint64_t> archive_xxh3;
    if (scheme_.kind != RedundancyKind::none) place_copies(step, archive_xxh3);
    world_.run_all(fmt::format("recording local step {}:", step), [&] {
      if (layout_.leader()) write_record(step, archive_xxh3, time);
    });
  } catch (...) {
    if (layout_.leader()) {
      std::error_code ec;
      std::filesystem::remove(record_path(step), ec);
      std::filesystem::remove(copy_path(step), ec);
      if (saved) std::filesystem::remove_all(dir, ec);
    }
    throw;
  }
  steps_.insert(std::upper_bound(steps_.begin(), steps_.end(), step), step);
  times_[step] =
      std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch()).count();
}

void LocalLevel::place_copies(std::int64_t step, std::optional<std::uint64_t>& archive_xxh3) {
  ArchiveBytes archive;
  world_.run_all(fmt::format("mapping local step {}:", step), [&] {
    if (!layout_.leader()) return;
    archive = map_directory(step_dir(step));
    archive_xxh3 = archive.checksum();
  });
  world_.run_all(fmt::format("placing the copies of local step {} ({}):", step,
                             options_.redundancy.describe()),
                 [&] {
                   if (!layout_.leader()) return;
                   base::fault::point("level.copies");
                   encode_redundancy(*layout_.leaders, scheme_, archive, copy_path(step));
                 });
}

bool LocalLevel::repair(std::int64_t step, std::vector<int>& rebuilt, std::string& why) {
  const auto dir = step_dir(step);
  boost::json::object verdict;  // what node 0's leader (world rank 0) decided, for every rank
  world_.run_all(fmt::format("checking local step {}:", step), [&] {
    if (!layout_.leader()) return;
    const std::optional<Record> record = read_record(step);
    std::error_code ec;
    const bool present = std::filesystem::exists(dir / "COMMITTED", ec);
    if (scheme_.kind == RedundancyKind::none) {
      verdict["lost"] = !(record && present);
      return;
    }
    std::optional<ArchiveBytes> archive;
    if (present && record && record->archive_xxh3) {
      try {
        archive = map_directory(dir);
        if (archive->checksum() != *record->archive_xxh3) archive.reset();
      } catch (const Error& e) {
        base::log::warn("level.damaged", "node={} step={} error=\"{}\"", layout_.node, step,
                        e.what());
        archive.reset();
      }
    }
    std::optional<MappedFile> copy;
    if (std::filesystem::exists(copy_path(step), ec)) {
      try {
        copy.emplace(copy_path(step), true);
      } catch (const Error&) {
        copy.reset();
      }
    }
    const RebuildOutcome outcome =
        rebuild_lost(*layout_.leaders, scheme_, archive ? &*archive : nullptr,
                     record ? record->archive_xxh3 : std::nullopt,
                     copy ? std::optional<std::span<const std::byte>>(copy->bytes()) : std::nullopt,
                     copy_path(step));
    verdict["recoverable"] = outcome.recoverable;
    verdict["why"] = outcome.why;
    boost::json::array nodes;
    for (const int n : outcome.rebuilt_nodes) nodes.emplace_back(n);
    verdict["rebuilt"] = std::move(nodes);
    if (outcome.archive) {
      std::filesystem::remove_all(dir, ec);
      std::filesystem::remove_all(dir.string() + ".cairn-tmp", ec);
      unpack_directory(*outcome.archive, dir);
      write_record(step, archive_checksum(*outcome.archive),
                   time_of(step).value_or(std::chrono::system_clock::time_point{}));
      base::log::warn("level.rebuilt", "node={} step={} directory=\"{}\" from=\"{}\"", layout_.node,
                      step, dir.string(), options_.redundancy.describe());
    }
  });
  if (scheme_.kind == RedundancyKind::none) {
    const auto lost = world_.allgather(static_cast<std::int64_t>(
        layout_.leader() && verdict.at("lost").as_bool() ? layout_.node + 1 : 0));
    std::vector<int> lost_nodes;
    for (const std::int64_t node : lost) {
      if (node != 0) lost_nodes.push_back(static_cast<int>(node - 1));
    }
    if (lost_nodes.empty()) return true;
    why = fmt::format("node{} {} lost {} part of step {} and redundancy is none",
                      lost_nodes.size() == 1 ? "" : "s", fmt::join(lost_nodes, ", "),
                      lost_nodes.size() == 1 ? "its" : "their", step);
    return false;
  }
  const boost::json::value agreed = world_.broadcast_json(verdict, 0);
  const auto& object = agreed.as_object();
  for (const auto& n : object.at("rebuilt").as_array()) rebuilt.push_back(n.to_number<int>());
  if (!object.at("recoverable").as_bool()) {
    why = std::string(object.at("why").as_string());
    return false;
  }
  return true;
}

std::optional<LocalLevel::Restored> LocalLevel::restore(
    std::int64_t step,
    const std::function<std::shared_ptr<CheckpointHandler>(const std::filesystem::path&)>&
        handler_for,
    const CheckpointArgs* args, std::string& why) {
  Restored restored;
  if (!repair(step, restored.rebuilt_nodes, why)) return std::nullopt;
  const auto dir = step_dir(step);
  std::string failure;
  try {
    ensure_checkpointer(handler_for(dir));
  } catch (const Error& e) {
    failure = e.what();
  }
  if (!world_.any(!failure.empty())) {
    try {
      restored.result = checkpointer_->restore(dir, args);
    } catch (const Error& e) {
      failure = e.what();
    }
  }
  const auto failures = world_.allgather(failure);
  for (std::size_t r = 0; r < failures.size(); ++r) {
    if (failures[r].empty()) continue;
    why = fmt::format("rank {}: {}", r, failures[r]);
    return std::nullopt;
  }
  return restored;
}

void LocalLevel::retain() {
  const std::size_t keep = std::min(steps_.size(), static_cast<std::size_t>(options_.keep));
  const std::vector<std::int64_t> kept(steps_.end() - static_cast<std::ptrdiff_t>(keep),
                                       steps_.end());
  const std::vector<std::int64_t> doomed(steps_.begin(),
                                         steps_.end() - static_cast<std::ptrdiff_t>(keep));
  world_.run_all(fmt::format("local level: removing old steps from '{}':", directory_.string()),
                 [&] {
                   if (!layout_.leader()) return;
                   for (const std::int64_t step : doomed) {
                     // The record goes first: a step half removed is never one.
                     std::filesystem::remove(record_path(step));
                     std::filesystem::remove(copy_path(step));
                   }
                   remove_unkept(kept);
                 });
  for (const std::int64_t step : doomed) times_.erase(step);
  steps_ = kept;
}

void LocalLevel::remove_unkept(const std::vector<std::int64_t>& kept) const {
  // Step directories of removed steps, and those left by saves that never counted (a job
  // killed before every node recorded the step), with their temporary names.
  std::vector<std::filesystem::path> doomed;
  for (const auto& entry : std::filesystem::directory_iterator(directory_)) {
    std::string name = entry.path().filename().string();
    for (const std::string_view suffix : {".cairn-tmp", ".cairn-old", ".cairn-deleting"}) {
      if (name.ends_with(suffix)) name.resize(name.size() - suffix.size());
    }
    const auto step = naming_->parse_name(name);
    if (step && entry.is_directory() && !std::binary_search(kept.begin(), kept.end(), *step)) {
      doomed.push_back(entry.path());
    }
  }
  for (const auto& path : doomed) std::filesystem::remove_all(path);
}

bool LocalLevel::make_readable(std::int64_t step, std::vector<int>& rebuilt, std::string& why) {
  return repair(step, rebuilt, why);
}

}  // namespace cairn::levels

namespace cairn {

std::string LocalRedundancy::describe() const {
  switch (kind) {
    case Kind::none: return "none";
    case Kind::partner: return fmt::format("partner(distance={})", partner_distance);
    case Kind::xor_parity: return fmt::format("xor(group={})", xor_group);
  }
  return "unknown";
}

LocalRedundancy LocalRedundancy::parse(std::string_view text) {
  const auto equals = text.find('=');
  const std::string_view name = text.substr(0, equals);
  std::optional<int> number;
  if (equals != std::string_view::npos) {
    const std::string_view digits = text.substr(equals + 1);
    int value = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (error != std::errc{} || end != digits.data() + digits.size() || digits.empty()) {
      throw InvalidArgument(fmt::format(
          "redundancy '{}': '{}' is not a number (none, partner, partner=D, xor, xor=G)", text,
          digits));
    }
    number = value;
  }
  if (name == "none" && !number) return none();
  if (name == "partner") return partner(number.value_or(1));
  if (name == "xor") return xor_parity(number.value_or(4));
  throw InvalidArgument(
      fmt::format("redundancy '{}' is not one of none, partner, partner=D, xor, xor=G", text));
}

}  // namespace cairn
