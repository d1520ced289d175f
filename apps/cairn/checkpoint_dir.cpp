#include "checkpoint_dir.hpp"

#include <boost/json.hpp>
#include <cairn/checkpointer.hpp>
#include <cairn/handlers.hpp>
#include <cairn/manager.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iterator>

namespace cairn_tool {
namespace fs = std::filesystem;

JsonFile read_json_file(const fs::path& path) {
  constexpr std::uintmax_t kMaxBytes = std::uintmax_t{64} << 20;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return {{}, fmt::format("'{}' is missing", path.string())};
  const auto size = fs::file_size(path, ec);
  if (ec) return {{}, fmt::format("'{}' cannot be read: {}", path.string(), ec.message())};
  if (size > kMaxBytes) {
    return {{},
            fmt::format("'{}' is too large for a metadata file ({} bytes)", path.string(), size)};
  }
  std::ifstream in(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && !in.eof()) return {{}, fmt::format("'{}' cannot be read", path.string())};
  boost::system::error_code jec;
  auto value = boost::json::parse(text, jec);
  if (jec) {
    return {{}, fmt::format("'{}' is not valid JSON ({})", path.string(), jec.message())};
  }
  return {std::move(value), {}};
}

boost::json::object Checkpoint::metrics() const {
  const auto* custom = step ? step->custom.if_object() : nullptr;
  if (custom == nullptr) return {};
  const auto* metrics = custom->if_contains(cairn::step_custom_key::kMetrics);
  return metrics && metrics->is_object() ? metrics->get_object() : boost::json::object{};
}

namespace {

// The handler type of an item directory, from the files it holds.
std::string guess_type(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir / "cairn-tree.json", ec)) return std::string(kArrayTree);
  if (fs::exists(dir / "value.json", ec)) return std::string(kJson);
  if (fs::exists(dir / "cairn-bytes.json", ec)) return std::string(kBytes);
  return {};
}

}  // namespace

Checkpoint read_checkpoint(const fs::path& path) {
  Checkpoint out;
  out.path = path;
  std::error_code ec;
  out.committed = fs::exists(path / cairn::kCommitMarker, ec);
  // The library's validating reader: what the tools print or follow from the step metadata
  // (numbers, the handler, item names) is then what restore would accept.
  try {
    out.step = cairn::StepMetadata::read(path);
  } catch (const cairn::Error& e) {
    out.problems.push_back(e.what());
  }
  const std::string type = out.step ? out.step->handler : std::string();
  if (type == kComposite && !out.step->items.empty()) {
    for (const auto& [name, item_type] : out.step->items) {
      // The name becomes a path under the checkpoint: one that is not a plain item name
      // ("../x", "/etc", ".") would make the tool read outside it.
      try {
        cairn::validate_item_name(name);
      } catch (const cairn::Error& e) {
        out.problems.push_back(fmt::format("'{}' is damaged: {} (the item is not read)",
                                           (path / cairn::kStepMetadataFile).string(), e.what()));
        continue;
      }
      Item item{name, path / name, item_type};
      if (!fs::is_directory(item.dir, ec)) {
        out.problems.push_back(
            fmt::format("item '{}' is listed in '{}' but its directory '{}' is "
                        "missing",
                        item.name, cairn::kStepMetadataFile, item.dir.string()));
        continue;
      }
      out.items.push_back(std::move(item));
    }
  } else if (!type.empty() && type != kComposite) {
    out.items.push_back({"", path, type});
  } else {
    // No usable metadata: find the items from the files.
    if (const auto single = guess_type(path); !single.empty()) {
      out.items.push_back({"", path, single});
    } else {
      // increment(ec), not a range-for: the range-for's increment throws on a read error.
      fs::directory_iterator it(path, ec);
      for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
        std::error_code dec;
        if (!it->is_directory(dec)) continue;
        const auto guessed = guess_type(it->path());
        if (!guessed.empty())
          out.items.push_back({it->path().filename().string(), it->path(), guessed});
      }
      if (ec) {
        out.problems.push_back(fmt::format("listing '{}' failed: {}", path.string(), ec.message()));
      }
    }
  }
  std::sort(out.items.begin(), out.items.end(),
            [](const Item& a, const Item& b) { return a.name < b.name; });
  return out;
}

std::optional<SaveCost> save_cost(const Checkpoint& ckpt) {
  if (!ckpt.step) return std::nullopt;
  const auto* timings = ckpt.step->json.if_contains("timings");
  if (timings == nullptr || !timings->is_object()) return std::nullopt;
  SaveCost cost{.bytes = ckpt.step->bytes};
  for (const auto& [name, value] : timings->get_object()) {
    if (value.is_number() && value.to_number<double>() >= 0)
      cost.seconds += value.to_number<double>();
  }
  return cost;
}

std::string save_cost_text(const SaveCost& cost) {
  return fmt::format("{} in {:.3f} s ({}/s)", human_bytes(cost.bytes), cost.seconds,
                     human_bytes(static_cast<std::uint64_t>(cost.bandwidth())));
}

std::string step_summary(const Checkpoint& ckpt) {
  const auto known = [](const std::string& text) { return text.empty() ? "?" : text; };
  const cairn::StepMetadata none;
  const cairn::StepMetadata& step = ckpt.step ? *ckpt.step : none;
  std::string out =
      fmt::format("  status:   {}{}\n",
                  ckpt.committed ? "committed at " + known(step.commit_time)
                                 : "INCOMPLETE (no COMMITTED marker)",
                  ckpt.step ? fmt::format(", saved by {} ranks", step.world_size) : std::string());
  out += fmt::format("  handler:  {}\n", known(step.handler));
  if (const auto cost = save_cost(ckpt)) {
    out += fmt::format("  data:     {}\n  saved:    {}\n", human_bytes(step.bytes),
                       save_cost_text(*cost));
  } else if (ckpt.step) {
    out += fmt::format("  data:     {}\n", human_bytes(step.bytes));
  }
  if (const auto metrics = ckpt.metrics(); !metrics.empty()) {
    out += fmt::format("  metrics:  {}\n", metrics_text(metrics));
  }
  for (const auto& p : ckpt.problems) out += fmt::format("  DAMAGED:  {}\n", p);
  return out;
}

bool is_checkpoint_dir(const fs::path& path) {
  return cairn::looks_like_checkpoint_directory(path) ||
         path.filename().string().ends_with(cairn::kTmpSuffix);
}

std::string permission_problem(const fs::path& path) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (!ec && fs::is_directory(status)) fs::directory_iterator(path, ec);
  if (ec != std::errc::permission_denied) return {};
  return fmt::format("'{}': permission denied (this user may not read it, or a directory above it)",
                     path.string());
}

std::string not_a_checkpoint(const fs::path& path) {
  if (std::string denied = permission_problem(path); !denied.empty()) return denied;
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (!fs::exists(status)) return fmt::format("'{}' does not exist", path.string());
  if (!fs::is_directory(status)) {
    return fmt::format("'{}' is a file, not a checkpoint (a checkpoint is a directory)",
                       path.string());
  }
  if (is_checkpoint_dir(path) || !guess_type(path).empty()) return {};
  if (cairn::is_checkpoint_root(path)) {
    return fmt::format(
        "'{}' is a checkpoint root, not one checkpoint: `cairn ls {}` lists its steps; "
        "name one of them (e.g. {}/<step>)",
        path.string(), path.string(), path.string());
  }
  return fmt::format("'{}' is not a cairn checkpoint: it holds no {} or {} (nor an item's {})",
                     path.string(), cairn::kStepMetadataFile, cairn::kCommitMarker,
                     "cairn-tree.json");
}

std::string not_a_root(const fs::path& path) {
  if (std::string denied = permission_problem(path); !denied.empty()) return denied;
  std::error_code ec;
  if (!fs::exists(path, ec)) return fmt::format("'{}' does not exist", path.string());
  if (!fs::is_directory(path, ec)) {
    return fmt::format("'{}' is a file, not a cairn root", path.string());
  }
  if (is_checkpoint_dir(path)) {
    return fmt::format("'{}' is one checkpoint, not a cairn root: see `cairn inspect {}`",
                       path.string(), path.string());
  }
  if (!guess_type(path).empty()) {
    return fmt::format("'{}' is an item of a checkpoint, not a cairn root", path.string());
  }
  return fmt::format(
      "'{}' is not a cairn root: it holds no cairn-root.json and no step directory (a "
      "directory with a step's name that holds {} or {})",
      path.string(), cairn::kStepMetadataFile, cairn::kCommitMarker);
}

std::string cairn_directory_holding(const fs::path& path, bool root_allowed, bool self_allowed) {
  const auto in = cairn::enclosing_cairn_directory(path);
  if (!in) return {};
  if (in->is_given_path && self_allowed && in->kind != cairn::CairnDirectoryKind::temporary) {
    return {};
  }
  switch (in->kind) {
    case cairn::CairnDirectoryKind::checkpoint:
      return fmt::format("the checkpoint '{}'", in->path.string());
    case cairn::CairnDirectoryKind::temporary:
      return fmt::format("'{}', a checkpoint being saved or deleted", in->path.string());
    case cairn::CairnDirectoryKind::root:
      return root_allowed ? std::string()
                          : fmt::format("the checkpoint root '{}'", in->path.string());
  }
  return {};
}

std::uint64_t disk_bytes(const fs::path& path) {
  std::uint64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(
           path, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code fec;
    if (it->is_regular_file(fec)) {
      const auto size = it->file_size(fec);
      if (!fec) total += size;
    }
  }
  return total;
}

std::string human_bytes(std::uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes) / 1024.0;
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  return fmt::format("{:.1f} {}", value, units[unit]);
}

std::string pretty_json(const boost::json::value& value, int indent) {
  const std::string pad(static_cast<std::size_t>(indent + 2), ' ');
  const std::string close(static_cast<std::size_t>(indent), ' ');
  if (value.is_object() && !value.get_object().empty()) {
    std::string out = "{\n";
    bool first = true;
    for (const auto& [key, v] : value.get_object()) {
      if (!first) out += ",\n";
      first = false;
      out += pad + boost::json::serialize(boost::json::string(key)) + ": " +
             pretty_json(v, indent + 2);
    }
    return out + "\n" + close + "}";
  }
  if (value.is_array() && !value.get_array().empty()) {
    const auto& array = value.get_array();
    // Short arrays of numbers stay on one line.
    const bool flat =
        array.size() <= 8 && std::all_of(array.begin(), array.end(), [](const auto& v) {
          return v.is_number() || v.is_bool() || v.is_null();
        });
    if (flat) return boost::json::serialize(value);
    std::string out = "[\n";
    for (std::size_t i = 0; i < array.size(); ++i) {
      out += pad + pretty_json(array[i], indent + 2) + (i + 1 < array.size() ? ",\n" : "\n");
    }
    return out + close + "]";
  }
  return boost::json::serialize(value);
}

std::string metrics_text(const boost::json::object& metrics) {
  std::string out;
  for (const auto& [key, v] : metrics) {
    if (!out.empty()) out += ", ";
    out += std::string(key) + "=";
    if (v.is_double()) {
      out += fmt::format("{:g}", v.get_double());
    } else {
      out += boost::json::serialize(v);
    }
  }
  return out;
}

}  // namespace cairn_tool
