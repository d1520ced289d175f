#include "manager/levels/local_level.hpp"

#include <boost/json.hpp>
#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <charconv>
#include <random>
#include <set>

#include "base/durable_file.hpp"
#include "base/fault.hpp"
#include "base/log.hpp"
#include "manager/levels/file_map.hpp"
#include "manager/levels/local_exchange.hpp"
#include "manager/levels/step_archive.hpp"
#include "manager/step_dirs.hpp"

namespace cairn::levels {
namespace {

constexpr std::string_view kRecordFormat = "cairn-level";
constexpr std::int64_t kRecordVersion = 1;
// The field of a node directory's cairn-root.json that names the root it serves.
constexpr std::string_view kPersistentRootField = "persistent_root";

std::string hex(std::uint64_t value) { return fmt::format("{:016x}", value); }

// Per-node checksums as JSON: hex strings, null where unknown.
boost::json::array checksums_to_json(const std::vector<std::optional<std::uint64_t>>& sums) {
  boost::json::array out;
  for (const auto& sum : sums) {
    if (sum) {
      out.emplace_back(hex(*sum));
    } else {
      out.emplace_back(nullptr);
    }
  }
  return out;
}

std::vector<std::optional<std::uint64_t>> checksums_from_json(const boost::json::array& json) {
  std::vector<std::optional<std::uint64_t>> out;
  for (const auto& sum : json) {
    out.push_back(sum.is_string()
                      ? std::optional(std::stoull(std::string(sum.as_string()), nullptr, 16))
                      : std::nullopt);
  }
  return out;
}

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
                       const std::filesystem::path& persistent_root,
                       std::chrono::seconds lock_lease)
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
  const std::string root_name = persistent_root.string();
  source_ = XXH3_64bits(root_name.data(), root_name.size());
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
    // A job that writes the directory holds its lock: `cairn gc` and other jobs leave it alone.
    manager::acquire_lock(directory_, lock_lease);
    locked_ = true;
    lock_renewal_ = std::make_unique<manager::LockRenewal>(directory_, lock_lease);
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

LocalLevel::~LocalLevel() {
  lock_renewal_.reset();
  if (locked_) manager::release_lock(directory_);
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

Binding LocalLevel::binding(std::int64_t step,
                            std::vector<std::optional<std::uint64_t>> archives) const {
  return {.step = step, .source = source_, .archives = std::move(archives)};
}

void LocalLevel::write_record(std::int64_t step, int part,
                              std::optional<std::uint64_t> archive_xxh3,
                              std::chrono::system_clock::time_point time,
                              const std::vector<std::optional<std::uint64_t>>& archives) const {
  boost::json::array sizes;
  for (const int n : layout_.node_sizes) sizes.emplace_back(n);
  boost::json::array sums = checksums_to_json(archives);
  boost::json::object record{
      {"format", kRecordFormat},
      {"version", kRecordVersion},
      {"step", step},
      {"world_size", world_.size()},
      {"node", part},
      {"node_sizes", std::move(sizes)},
      {"redundancy", options_.redundancy.describe()},
      {"time_ns",
       std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch()).count()}};
  if (archive_xxh3) record["archive_xxh3"] = hex(*archive_xxh3);
  if (!sums.empty()) record["archives_xxh3"] = std::move(sums);
  base::write_file_durably(record_path(step), boost::json::serialize(record));
}

std::optional<LocalLevel::Record> LocalLevel::read_record(std::int64_t step) const {
  try {
    const auto text = base::read_small_file(record_path(step), 64 * 1024);
    const boost::json::value json = boost::json::parse(text);
    const auto& object = json.as_object();
    if (object.at("format").as_string() != kRecordFormat ||
        object.at("step").to_number<std::int64_t>() != step ||
        object.at("world_size").to_number<int>() != world_.size()) {
      return std::nullopt;
    }
    const int node = object.at("node").to_number<int>();
    if (node < 0 || node >= layout_.nodes) return std::nullopt;
    std::vector<int> sizes;
    for (const auto& n : object.at("node_sizes").as_array()) sizes.push_back(n.to_number<int>());
    if (sizes != layout_.node_sizes) return std::nullopt;
    Record record{.step = step,
                  .node = node,
                  .archive_xxh3 = std::nullopt,
                  .time_ns = object.at("time_ns").to_number<std::int64_t>()};
    if (const auto* sum = object.if_contains("archive_xxh3")) {
      record.archive_xxh3 = std::stoull(std::string(sum->as_string()), nullptr, 16);
    }
    if (const auto* sums = object.if_contains("archives_xxh3")) {
      record.archives = checksums_from_json(sums->as_array());
    }
    return record;
  } catch (const std::exception&) {
    return std::nullopt;  // missing or damaged: the node does not hold the step
  }
}

std::optional<std::string> LocalLevel::other_layout(std::int64_t step) const {
  try {
    const boost::json::value json =
        boost::json::parse(base::read_small_file(record_path(step), 64 * 1024));
    const auto& object = json.as_object();
    if (object.at("format").as_string() != kRecordFormat) return std::nullopt;
    return fmt::format(
        "it was saved by {} ranks on nodes of {} ranks (this job: {} ranks on "
        "nodes of {})",
        boost::json::serialize(object.at("world_size")),
        boost::json::serialize(object.at("node_sizes")), world_.size(),
        fmt::join(layout_.node_sizes, ","));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void LocalLevel::scan() {
  boost::json::array mine;
  std::map<std::int64_t, std::string> others;
  world_.run_all(fmt::format("local level: listing '{}':", directory_.string()), [&] {
    if (!layout_.leader()) return;
    for (const auto& entry : std::filesystem::directory_iterator(directory_ / kLevelFolder)) {
      const auto path = entry.path();
      if (path.extension() != ".json") continue;
      const auto step = naming_->parse_name(path.stem().string());
      if (!step) continue;
      if (const auto record = read_record(*step)) {
        mine.push_back(boost::json::array{record->step, record->time_ns});
      } else if (auto why = other_layout(*step)) {
        others.emplace(*step, std::move(*why));
      }
    }
  });
  other_layouts_.clear();
  for (const auto& [step, why] : others) other_layouts_.push_back(step);
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
  // A newer step of another layout is not used by this job, and not removed before this job
  // holds a newer one (retain()).
  for (const auto& [step, why] : others) {
    if (steps_.empty() || step > steps_.back()) {
      base::log::warn("level.step_skipped",
                      "node={} step={} why=\"{}; kept until a newer step is "
                      "saved\"",
                      layout_.node, step, why);
    }
  }
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
    std::vector<std::optional<std::uint64_t>> archives;
    if (scheme_.kind != RedundancyKind::none) archives = place_copies(step, archive_xxh3);
    world_.run_all(fmt::format("recording local step {}:", step), [&] {
      if (layout_.leader()) write_record(step, layout_.node, archive_xxh3, time, archives);
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

std::vector<std::optional<std::uint64_t>> LocalLevel::place_copies(
    std::int64_t step, std::optional<std::uint64_t>& archive_xxh3) {
  ArchiveBytes archive;
  world_.run_all(fmt::format("mapping local step {}:", step), [&] {
    if (!layout_.leader()) return;
    archive = map_directory(step_dir(step));
    archive_xxh3 = archive.checksum();
  });
  std::vector<std::optional<std::uint64_t>> archives;
  world_.run_all(fmt::format("placing the copies of local step {} ({}):", step,
                             options_.redundancy.describe()),
                 [&] {
                   if (!layout_.leader()) return;
                   base::fault::point("level.copies");
                   encode_redundancy(*layout_.leaders, scheme_, binding(step, {}), archive,
                                     copy_path(step));
                   // Each node records every node's checksum, so that a copy is checked
                   // against the level's records, not only against itself.
                   for (const std::int64_t sum :
                        layout_.leaders->allgather(static_cast<std::int64_t>(*archive_xxh3))) {
                     archives.emplace_back(static_cast<std::uint64_t>(sum));
                   }
                 });
  return archives;
}

LocalLevel::Parts LocalLevel::assign_parts(std::int64_t step) {
  Parts parts{.part = layout_.node};
  world_.run_all(fmt::format("matching the parts of local step {} to the nodes:", step), [&] {
    if (!layout_.leader()) return;
    const std::optional<Record> record = read_record(step);
    const auto held =
        layout_.leaders->allgather(static_cast<std::int64_t>(record ? record->node : -1));
    const auto nodes = static_cast<std::size_t>(layout_.nodes);
    const auto size_of = [&](std::size_t n) { return layout_.node_sizes[n]; };
    // A part stays with the first node that records it (and has its number of ranks); a part
    // that no node holds goes to the first node holding none, of its number of ranks.
    std::vector<int> node_of(nodes, -1);
    std::vector<bool> placed(nodes, false);
    for (std::size_t n = 0; n < nodes; ++n) {
      const std::int64_t p = held[n];
      if (p < 0 || node_of[static_cast<std::size_t>(p)] >= 0 ||
          size_of(static_cast<std::size_t>(p)) != size_of(n)) {
        continue;
      }
      node_of[static_cast<std::size_t>(p)] = static_cast<int>(n);
      placed[n] = true;
    }
    for (std::size_t p = 0; p < nodes; ++p) {
      if (node_of[p] >= 0) continue;
      for (std::size_t n = 0; n < nodes; ++n) {
        if (placed[n] || size_of(n) != size_of(p)) continue;
        node_of[p] = static_cast<int>(n);
        placed[n] = true;
        break;
      }
    }
    bool in_order = true;
    for (std::size_t p = 0; p < nodes; ++p) {
      if (node_of[p] == layout_.node) parts.part = static_cast<int>(p);
      in_order = in_order && node_of[p] == static_cast<int>(p);
    }
    parts.node_of = node_of;
    if (in_order) return;
    parts.ordered.emplace(reorder_leaders(*layout_.leaders, parts.part));
    base::log::info("level.parts_moved", "step={} node={} part={}", step, layout_.node, parts.part);
  });
  return parts;
}

bool LocalLevel::repair(std::int64_t step, const Parts& parts, std::vector<int>& rebuilt,
                        std::string& why) {
  const auto dir = step_dir(step);
  const Comm* leaders =
      layout_.leader() ? (parts.ordered ? &*parts.ordered : &*layout_.leaders) : nullptr;
  boost::json::object verdict;  // what node 0's leader (world rank 0) decided, for every rank
  world_.run_all(fmt::format("checking local step {}:", step), [&] {
    if (!layout_.leader()) return;
    std::optional<Record> record = read_record(step);
    if (record && record->node != parts.part) record.reset();  // another part: not this one
    std::error_code ec;
    const bool present = std::filesystem::exists(dir / "COMMITTED", ec);
    if (scheme_.kind == RedundancyKind::none) {
      verdict["lost"] = !(record && present);
      return;
    }
    // The level's record of every node's archive, from the first node that still has one.
    std::vector<std::optional<std::uint64_t>> archives;
    const boost::json::array mine =
        record ? checksums_to_json(record->archives) : boost::json::array{};
    for (const auto& node : leaders->allgather_json(mine)) {
      if (archives.empty()) archives = checksums_from_json(node.as_array());
    }
    std::optional<ArchiveBytes> archive;
    if (present && record && record->archive_xxh3) {
      try {
        archive = map_directory(dir);
        if (archive->checksum() != *record->archive_xxh3) archive.reset();
      } catch (const Error& e) {
        base::log::warn("level.damaged", "node={} part={} step={} error=\"{}\"", layout_.node,
                        parts.part, step, e.what());
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
        rebuild_lost(*leaders, scheme_, binding(step, archives), archive ? &*archive : nullptr,
                     record ? record->archive_xxh3 : std::nullopt,
                     copy ? std::optional<std::span<const std::byte>>(copy->bytes()) : std::nullopt,
                     copy_path(step));
    verdict["recoverable"] = outcome.recoverable;
    verdict["why"] = outcome.why;
    boost::json::array nodes;  // the nodes that received a rebuilt part
    for (const int p : outcome.rebuilt_nodes) {
      nodes.emplace_back(parts.node_of.at(static_cast<std::size_t>(p)));
    }
    verdict["rebuilt"] = std::move(nodes);
    if (outcome.archive) {
      std::filesystem::remove_all(dir, ec);
      std::filesystem::remove_all(dir.string() + ".cairn-tmp", ec);
      unpack_directory(*outcome.archive, dir);
      write_record(step, parts.part, archive_checksum(*outcome.archive),
                   time_of(step).value_or(std::chrono::system_clock::time_point{}), archives);
      base::log::warn("level.rebuilt", "node={} part={} step={} directory=\"{}\" from=\"{}\"",
                      layout_.node, parts.part, step, dir.string(), options_.redundancy.describe());
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
  const Parts parts = assign_parts(step);
  if (!repair(step, parts, restored.rebuilt_nodes, why)) return std::nullopt;
  const auto dir = step_dir(step);
  std::string failure;
  try {
    ensure_checkpointer(handler_for(dir));
  } catch (const Error& e) {
    failure = e.what();
  }
  // Where another decomposition asks for cells that other nodes saved, they come by the
  // exchange; planned before any target byte is written, so that a step it cannot serve
  // leaves the targets to the next level.
  std::optional<LocalExchange> exchange;
  if (!world_.any(!failure.empty()) && args != nullptr) {
    try {
      exchange.emplace(world_, *layout_.node_comm, dir, *args);
    } catch (const Error& e) {
      failure = e.what();
    }
    if (failure.empty() && !exchange->problem().empty()) {
      why = exchange->problem();
      return std::nullopt;
    }
  }
  if (!world_.any(!failure.empty())) {
    try {
      restored.result = checkpointer_->restore(dir, args);
    } catch (const Error& e) {
      failure = e.what();
    }
  }
  if (!world_.any(!failure.empty()) && exchange && exchange->needed()) {
    try {
      exchange->run();
      restored.exchanged = true;
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
                   std::vector<std::int64_t> doomed_here = doomed;
                   std::vector<std::int64_t> kept_here = kept;
                   // Another layout's steps go once this job holds a newer step.
                   std::vector<std::int64_t> others;
                   for (const std::int64_t step : other_layouts_) {
                     const bool newer_held = !kept.empty() && kept.back() > step;
                     if (std::binary_search(kept.begin(), kept.end(), step)) continue;
                     (newer_held ? doomed_here : others).push_back(step);
                   }
                   other_layouts_ = others;
                   kept_here.insert(kept_here.end(), others.begin(), others.end());
                   std::sort(kept_here.begin(), kept_here.end());
                   for (const std::int64_t step : doomed_here) {
                     // The record goes first: a step half removed is never one.
                     std::filesystem::remove(record_path(step));
                     std::filesystem::remove(copy_path(step));
                   }
                   remove_unkept(kept_here);
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
  return repair(step, assign_parts(step), rebuilt, why);
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
