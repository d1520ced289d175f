// cairn ls ROOT: the steps of a checkpoint root, whatever their state.
#include <boost/json.hpp>
#include <cairn/checkpoint_root.hpp>
#include <cairn/comm.hpp>
#include <fmt/format.h>

#include "checkpoint_dir.hpp"
#include "commands.hpp"
#include "leaf_stats.hpp"
#include "lock.hpp"

namespace cairn_tool {

int run_ls(const cairn::Comm& comm, const LsOptions& options, JsonStream& json) {
  if (!comm.is_primary()) return kOk;
  const std::filesystem::path root = options.root;
  if (is_checkpoint_dir(root)) {
    throw CommandError(
        fmt::format("'{}' is one checkpoint, not a root of several: see `cairn inspect {}`",
                    root.string(), root.string()));
  }
  if (!cairn::is_checkpoint_root(root)) throw CommandError(not_a_root(root));
  const auto steps = cairn::list_step_directories(root);
  const auto lock = read_lock(root);

  boost::json::array rows;
  for (const auto& dir : steps) {
    boost::json::object row = {{"step", dir.step},
                               {"status", cairn::step_status_name(dir.status)},
                               {"path", dir.path.string()},
                               {"bytes", disk_bytes(dir.path)}};
    const Checkpoint ckpt = read_checkpoint(dir.path);
    row["time"] = ckpt.step ? ckpt.step->commit_time : std::string();
    boost::json::array items;
    for (const auto& item : ckpt.items) items.emplace_back(item.label());
    row["items"] = std::move(items);
    row["metrics"] = ckpt.metrics();
    if (const auto cost = save_cost(ckpt)) {
      row["data_bytes"] = cost->bytes;
      row["save_s"] = cost->seconds;
      row["bandwidth_bytes_per_s"] = cost->bandwidth();
    }
    // A committed step whose metadata cannot be read is worth saying; incomplete ones are
    // expected to lack it.
    if (dir.status == cairn::StepStatus::committed && !ckpt.problems.empty()) {
      row["problem"] = ckpt.problems.front();
    }
    // The values' statistics that the save recorded, from the index alone.
    if (options.long_listing && dir.status == cairn::StepStatus::committed) {
      row["stats"] = checkpoint_stats(ckpt);
    }
    rows.push_back(std::move(row));
  }

  if (options.json) {
    boost::json::object out = {{"root", root.string()}, {"steps", rows}};
    out["lock"] = lock ? boost::json::value(lock->json()) : boost::json::value(nullptr);
    json.document(out);
    return kOk;
  }
  fmt::print("{}: {} step director{}{}\n", root.string(), steps.size(),
             steps.size() == 1 ? "y" : "ies", lock ? "; locked by " + lock->text() : std::string());
  if (rows.empty()) return kOk;
  const auto cost_columns = [&](const boost::json::object* row) -> std::string {
    if (!options.long_listing) return {};
    if (row == nullptr) return fmt::format("{:>10}  {:>8}  {:>12}  ", "DATA", "SAVE", "BANDWIDTH");
    const auto* seconds = row->if_contains("save_s");
    if (seconds == nullptr) return fmt::format("{:>10}  {:>8}  {:>12}  ", "-", "-", "-");
    return fmt::format(
        "{:>10}  {:>8}  {:>12}  ", human_bytes(row->at("data_bytes").to_number<std::uint64_t>()),
        fmt::format("{:.3f} s", seconds->to_number<double>()),
        human_bytes(
            static_cast<std::uint64_t>(row->at("bandwidth_bytes_per_s").to_number<double>())) +
            "/s");
  };
  fmt::print("{:>10}  {:<13}  {:<20}  {:>10}  {}{:<16}  {}\n", "STEP", "STATUS", "TIME", "SIZE",
             cost_columns(nullptr), "ITEMS", "METRICS");
  for (const auto& value : rows) {
    const auto& row = value.get_object();
    std::string items;
    for (const auto& item : row.at("items").get_array()) {
      items += (items.empty() ? "" : ",") + std::string(item.get_string());
    }
    std::string note = metrics_text(row.at("metrics").get_object());
    if (const auto* problem = row.if_contains("problem")) {
      note = "DAMAGED: " + std::string(problem->get_string());
    }
    const auto status = std::string(row.at("status").get_string());
    const auto path = std::filesystem::path(std::string(row.at("path").get_string()));
    if (status == "unreadable") {
      note = path.filename().string() + " (this user may not read it)";
    } else if (status == "quarantined") {
      // A restart found it damaged and restored an older step.
      note = path.filename().string() + " (did not restore; moved aside and kept)";
    } else if (status != "committed") {
      note = path.filename().string();
    }
    fmt::print(
        "{:>10}  {:<13}  {:<20}  {:>10}  {}{:<16}  {}\n", row.at("step").to_number<std::int64_t>(),
        status, std::string(row.at("time").get_string()),
        human_bytes(row.at("bytes").to_number<std::uint64_t>()), cost_columns(&row), items, note);
    if (const auto* stats = row.if_contains("stats")) {
      for (const auto& [leaf, values] : stats->get_object()) {
        fmt::print("{:>10}  {}: {}\n", "", std::string(leaf), stats_text(values.get_object()));
      }
    }
  }
  return kOk;
}

}  // namespace cairn_tool
