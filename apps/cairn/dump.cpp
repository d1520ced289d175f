// cairn dump CHECKPOINT [LEAF...] [--slice S] [--stats | --npy FILE | --raw FILE]: the values
// of leaves.
#include <boost/json.hpp>
#include <cairn/storage.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <cstring>

#include "checkpoint_dir.hpp"
#include "commands.hpp"
#include "export.hpp"
#include "progress.hpp"
#include "read.hpp"
#include "select.hpp"
#include "values.hpp"

namespace cairn_tool {
namespace {

// One leaf to print: an array or value leaf of a tree item, or a whole JSON item.
struct Target {
  std::string name;  ///< as `cairn diff` names it: "item/leaf", or "leaf" in a single item
  const Item* item = nullptr;
  cairn::SavedLeafInfo leaf;  ///< tree leaves
};

// Prints the elements of a box in row-major order, as text lines, or as nested JSON arrays
// into `json` when it is given.
class ElementPrinter {
 public:
  ElementPrinter(cairn::DType dtype, const cairn::Box& box, JsonStream* json)
      : dtype_(dtype), box_(box), json_(json), index_(box.rank(), 0) {}

  void print(const std::byte* p, std::int64_t n) {
    const std::size_t size = cairn::dtype_size(dtype_);
    for (std::int64_t i = 0; i < n; ++i) one(p + i * static_cast<std::int64_t>(size));
  }

 private:
  void one(const std::byte* p) {
    const std::size_t k = box_.rank();
    if (k == 0) {
      if (json_) {
        json_->value(element_json(dtype_, p));
      } else {
        fmt::print("  {}", element_text(dtype_, p));
      }
      return;
    }
    std::string out;
    if (json_) {
      for (std::size_t d = k; d-- > 0 && index_[d] == 0;) json_->begin_array();
      json_->value(element_json(dtype_, p));
    } else {
      if (index_[k - 1] % kPerLine == 0) {
        std::string where;
        for (std::size_t d = 0; d < k; ++d) {
          where += fmt::format("{}{}", d ? "," : "", box_.offset[d] + index_[d]);
        }
        out += fmt::format("{}  ({})", printed_ > 0 ? "\n" : "", where);
      }
      out += " " + element_text(dtype_, p);
    }
    ++printed_;
    // Advance the index; close the arrays (JSON) of the dimensions that end here.
    for (std::size_t d = k; d-- > 0;) {
      if (++index_[d] < box_.extent[d]) break;
      index_[d] = 0;
      if (json_) json_->end_array();
    }
    if (json_) {
      if (index_[k - 1] == 0 && k > 1) json_->line_break();
      return;
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
  }

  static constexpr std::int64_t kPerLine = 8;
  cairn::DType dtype_;
  cairn::Box box_;
  JsonStream* json_;
  std::vector<std::int64_t> index_;
  std::int64_t printed_ = 0;
};

std::string stats_text(const Stats& s, cairn::DType dtype) {
  if (s.count == 0) return fmt::format("no number ({} NaN)", s.nan);
  std::string minmax;
  if (cairn::is_unsigned_integer(dtype)) {
    minmax = fmt::format("min {}, max {}", s.umin, s.umax);
  } else if (cairn::is_signed_integer(dtype) || dtype == cairn::DType::boolean) {
    minmax = fmt::format("min {}, max {}", s.imin, s.imax);
  } else {
    minmax =
        fmt::format("{}min {}, max {}", cairn::is_complex(dtype) ? "|z|: " : "", s.dmin, s.dmax);
  }
  return fmt::format("{}, mean {}, {} element{}{}", minmax,
                     static_cast<double>(s.sum / static_cast<long double>(s.count)), s.count,
                     s.count == 1 ? "" : "s", s.nan > 0 ? fmt::format(", {} NaN", s.nan) : "");
}

// Reads `region` of an array leaf (at least 1-d, with elements) in rounds whose rows are split
// among the ranks and gathered on the primary, which gives `take` each rank's part in turn:
// the region's elements in row-major order. Collective.
void read_in_rounds(const cairn::Comm& comm, const Target& t, const cairn::Box& region,
                    const Progress& progress,
                    const std::function<void(std::span<const std::byte>)>& take) {
  const std::size_t size = cairn::dtype_size(t.leaf.dtype);
  std::vector<std::byte> buffer;
  const std::int64_t row =
      cairn::volume(region) / region.extent[0] * static_cast<std::int64_t>(size);
  const std::int64_t per_round =
      std::max<std::int64_t>(1, static_cast<std::int64_t>(kPieceBytes) / row);
  const auto total = static_cast<std::uint64_t>(cairn::volume(region)) * size;
  std::uint64_t done = 0;
  for (std::int64_t first = 0; first < region.extent[0]; first += per_round) {
    const std::int64_t n = std::min(per_round, region.extent[0] - first);
    const std::int64_t mine = first + n * comm.rank() / comm.size();
    const cairn::Box box = rows(region, mine, first + n * (comm.rank() + 1) / comm.size() - mine);
    buffer.resize(static_cast<std::size_t>(cairn::volume(box)) * size);
    read_box(comm, t.item->dir, t.leaf, box, buffer.data());
    const auto parts = comm.gather_bytes(buffer);
    done += static_cast<std::uint64_t>(n * row);
    progress.update(t.name, done, total, "bytes");
    if (!comm.is_primary()) continue;
    progress.clear();
    for (const auto& part : parts) take(part);
  }
}

// The values of `region` of an array leaf, which the primary prints. Collective.
void dump_values(const cairn::Comm& comm, const Target& t, const cairn::Box& region,
                 JsonStream* json, const Progress& progress) {
  const std::size_t size = cairn::dtype_size(t.leaf.dtype);
  ElementPrinter printer(t.leaf.dtype, region, json);
  if (region.rank() == 0) {
    std::vector<std::byte> buffer(size);
    read_box(comm, t.item->dir, t.leaf, region, buffer.data());
    if (comm.is_primary()) printer.print(buffer.data(), 1);
    return;
  }
  if (cairn::volume(region) == 0) {  // an array with a dimension of extent 0
    if (json != nullptr) {
      json->begin_array();
      json->end_array();
    } else if (comm.is_primary()) {
      fmt::print("  (no element)");
    }
    return;
  }
  read_in_rounds(comm, t, region, progress, [&](std::span<const std::byte> part) {
    printer.print(part.data(), static_cast<std::int64_t>(part.size() / size));
  });
}

// Writes `region` of an array leaf to `file`; returns the file's bytes (on the primary).
// Collective.
std::uint64_t export_values(const cairn::Comm& comm, const Target& t, const cairn::Box& region,
                            ExportFile& file, const Progress& progress) {
  if (comm.is_primary()) file.begin(t.leaf.dtype, region.extent);
  if (region.rank() == 0) {
    std::vector<std::byte> buffer(cairn::dtype_size(t.leaf.dtype));
    read_box(comm, t.item->dir, t.leaf, region, buffer.data());
    if (comm.is_primary()) file.write(buffer);
  } else if (cairn::volume(region) > 0) {
    read_in_rounds(comm, t, region, progress,
                   [&](std::span<const std::byte> part) { file.write(part); });
  }
  progress.clear();
  return file.commit();
}

// Min/max/mean of `region`, each rank reading its slab of it in pieces. Collective.
Stats dump_stats(const cairn::Comm& comm, const Target& t, const cairn::Box& region,
                 const Progress& progress) {
  const std::size_t size = cairn::dtype_size(t.leaf.dtype);
  Stats stats;
  std::vector<std::byte> buffer;
  cairn::Box mine = region;
  if (region.rank() > 0) {
    const std::int64_t n = region.extent[0];
    const std::int64_t first = n * comm.rank() / comm.size();
    mine = rows(region, first, n * (comm.rank() + 1) / comm.size() - first);
  }
  const auto total = static_cast<std::uint64_t>(cairn::volume(mine)) * size;
  std::uint64_t done = 0;
  for_each_piece(comm, mine, size, kPieceBytes, [&](const cairn::Box& piece) {
    buffer.resize(static_cast<std::size_t>(cairn::volume(piece)) * size);
    read_box(comm, t.item->dir, t.leaf, piece, buffer.data());
    // A 0-d array is read by every rank and counted by the primary.
    if (piece.rank() > 0 || comm.is_primary()) {
      stats.add(t.leaf.dtype, buffer.data(), cairn::volume(piece));
    }
    done += buffer.size();
    progress.update(t.name, done, total, "bytes");
  });
  progress.clear();
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(&stats), sizeof(stats));
  Stats all;
  for (const auto& part : comm.gather_bytes(bytes)) {
    Stats other;
    std::memcpy(&other, part.data(), std::min(part.size(), sizeof(other)));
    all.merge(t.leaf.dtype, other);
  }
  return all;
}

boost::json::value leaf_value(const cairn::Leaf& leaf) {
  switch (leaf.kind()) {
    case cairn::LeafKind::scalar: return leaf.as_scalar().to_json().as_object().at("value");
    case cairn::LeafKind::string: return boost::json::string(leaf.as_string());
    default: return leaf.as_json();
  }
}

// Writes the members of `head` into the object open in `json`.
void write_members(JsonStream& json, const boost::json::object& head) {
  for (const auto& [key, value] : head) {
    json.key(key);
    json.value(value);
  }
}

// Prints one target (its header, then values or statistics); with --json, one object of the
// "leaves" array. Collective.
void dump_target(const cairn::Comm& comm, const Target& t, const DumpOptions& options,
                 JsonStream& json, const Progress& progress) {
  const bool primary = comm.is_primary();
  boost::json::object head = {{"leaf", t.name}, {"kind", cairn::leaf_kind_name(t.leaf.kind)}};
  if (t.item->type == kJson) {
    const auto file = read_json_file(t.item->dir / "value.json");
    if (!file.value)
      throw cairn::FormatError((t.item->dir / "value.json").string(), "value", file.error);
    head["kind"] = "json item";
    head["value"] = *file.value;
  } else if (t.leaf.kind != cairn::LeafKind::array) {
    const auto saved = cairn::restore_tree_as_saved(comm, t.item->dir, {.select = {t.leaf.path}});
    if (t.leaf.kind == cairn::LeafKind::scalar) head["dtype"] = cairn::dtype_name(t.leaf.dtype);
    head["value"] = leaf_value(saved.at(t.leaf.path));
  }
  if (const auto* value = head.if_contains("value")) {
    if (!primary) return;
    if (options.json) {
      json.value(head);
      json.line_break();
    } else {
      fmt::print("{} ({}) = {}\n", t.name, std::string(head.at("kind").get_string()),
                 boost::json::serialize(*value));
    }
    return;
  }
  const cairn::Box region = parse_slice(options.slice, t.leaf.shape, t.name);
  head["dtype"] = cairn::dtype_name(t.leaf.dtype);
  head["shape"] = boost::json::value_from(t.leaf.shape);
  head["order"] = t.leaf.fortran_order ? "F" : "C";
  head["slice"] = {{"offset", boost::json::value_from(region.offset)},
                   {"extent", boost::json::value_from(region.extent)}};
  if (options.stats) {
    const Stats stats = dump_stats(comm, t, region, progress);
    if (!primary) return;
    if (options.json) {
      head["stats"] = stats.json(t.leaf.dtype);
      json.value(head);
      json.line_break();
    } else {
      fmt::print("{} {} {}{}: {}\n", t.name, cairn::dtype_name(t.leaf.dtype),
                 cairn::shape_to_string(t.leaf.shape),
                 options.slice.empty() ? "" : " [" + options.slice + "]",
                 stats_text(stats, t.leaf.dtype));
    }
    return;
  }
  if (primary) {
    if (options.json) {
      json.begin_object();
      write_members(json, head);
      json.key("values");
      if (region.rank() > 1) json.line_break();
    } else {
      fmt::print("{} {} {}, order {}, slice offset {} extent {}:\n", t.name,
                 cairn::dtype_name(t.leaf.dtype), cairn::shape_to_string(t.leaf.shape),
                 t.leaf.fortran_order ? "F" : "C", cairn::shape_to_string(region.offset),
                 cairn::shape_to_string(region.extent));
    }
    std::fflush(stdout);
  }
  dump_values(comm, t, region, options.json ? &json : nullptr, progress);
  if (options.json) {
    json.end_object();
    json.line_break();
  } else if (primary) {
    fmt::print("\n");
  }
}

// The targets of a checkpoint in the order of its items and leaves. Collective.
std::vector<Target> find_targets(const cairn::Comm& comm, const Checkpoint& ckpt,
                                 std::vector<std::string>& notes) {
  std::vector<Target> out;
  for (const auto& item : ckpt.items) {
    const std::string prefix = item.name.empty() ? "" : item.name + "/";
    if (item.type == kArrayTree) {
      for (const auto& leaf : cairn::read_tree_info(comm, item.dir).leaves) {
        out.push_back({prefix + leaf.path, &item, leaf});
      }
    } else if (item.type == kJson) {
      out.push_back({item.label(), &item, {}});
    } else {
      notes.push_back(
          fmt::format("item '{}' ({}) holds no values to print", item.label(), item.type));
    }
  }
  return out;
}

// Writes the one array leaf `chosen` names (its --slice) to the --npy or --raw file, and says
// what it wrote. Collective.
int export_target(const cairn::Comm& comm, const std::vector<const Target*>& chosen,
                  const DumpOptions& options, JsonStream& json) {
  const bool npy = !options.npy.empty();
  const std::string flag = npy ? "--npy" : "--raw";
  if (chosen.size() != 1) {
    std::string names;
    for (const auto* t : chosen) names += (names.empty() ? "" : ", ") + t->name;
    throw CommandError(
        options.leaves.empty()
            ? fmt::format("{} writes one array: name its leaf (the leaves of '{}': {})", flag,
                          options.checkpoint, names.empty() ? "none" : names)
            : fmt::format("{} writes one array, but {} leaves were chosen ({}): name one", flag,
                          chosen.size(), names));
  }
  const Target& t = *chosen.front();
  if (t.item->type != kArrayTree || t.leaf.kind != cairn::LeafKind::array) {
    const std::string kind = t.item->type == kJson
                                 ? "a JSON item"
                                 : fmt::format("a {} leaf", cairn::leaf_kind_name(t.leaf.kind));
    throw CommandError(fmt::format(
        "'{}' is {}, not an array: {} writes array leaves (`cairn dump {} {}` prints it)", t.name,
        kind, flag, options.checkpoint, t.name));
  }
  if (npy && !npy_descr(t.leaf.dtype)) {
    throw CommandError(fmt::format("'{}' is {}, which NumPy has no dtype for: write it with --raw",
                                   t.name, cairn::dtype_name(t.leaf.dtype)));
  }
  const cairn::Box region = parse_slice(options.slice, t.leaf.shape, t.name);
  ExportFile file(comm, npy ? options.npy : options.raw,
                  npy ? ExportFormat::npy : ExportFormat::raw, options.force);
  const Progress progress(!options.quiet && !options.json, comm.is_primary());
  const std::uint64_t bytes = export_values(comm, t, region, file, progress);
  if (!comm.is_primary()) return kOk;
  if (options.json) {
    json.document(boost::json::object{{"checkpoint", options.checkpoint},
                                      {"leaf", t.name},
                                      {"dtype", cairn::dtype_name(t.leaf.dtype)},
                                      {"shape", boost::json::value_from(t.leaf.shape)},
                                      {"order", t.leaf.fortran_order ? "F" : "C"},
                                      {"slice",
                                       {{"offset", boost::json::value_from(region.offset)},
                                        {"extent", boost::json::value_from(region.extent)}}},
                                      {"file", file.path().string()},
                                      {"file_format", npy ? "npy" : "raw"},
                                      {"file_bytes", bytes}});
  } else {
    fmt::print("wrote {} {} {}, slice offset {} extent {}, to {} ({}, {} bytes, C order{})\n",
               t.name, cairn::dtype_name(t.leaf.dtype), cairn::shape_to_string(t.leaf.shape),
               cairn::shape_to_string(region.offset), cairn::shape_to_string(region.extent),
               file.path().string(), npy ? "npy" : "raw little-endian", bytes,
               t.leaf.fortran_order ? "; a Fortran writer saw the dimensions reversed" : "");
  }
  return kOk;
}

}  // namespace

int run_dump(const cairn::Comm& comm, const DumpOptions& options, JsonStream& json) {
  if (const auto why = on_primary(comm, [&] { return not_a_checkpoint(options.checkpoint); });
      !why.empty()) {
    throw CommandError(why);
  }
  const Checkpoint ckpt = read_checkpoint(options.checkpoint);
  std::vector<std::string> notes;
  const auto all = find_targets(comm, ckpt, notes);
  std::vector<const Target*> chosen;
  for (const auto& t : all) {
    if (selected(t.name, options.leaves)) chosen.push_back(&t);
  }
  for (const auto& wanted : options.leaves) {
    if (std::none_of(all.begin(), all.end(),
                     [&](const Target& t) { return selected(t.name, {wanted}); })) {
      std::string names;
      for (const auto& t : all) names += (names.empty() ? "" : ", ") + t.name;
      throw CommandError(fmt::format("'{}' has {} '{}' (its leaves: {})", options.checkpoint,
                                     is_glob_pattern(wanted) ? "no leaf matching" : "no leaf",
                                     wanted, names.empty() ? "none" : names));
    }
  }
  if (!options.npy.empty() || !options.raw.empty())
    return export_target(comm, chosen, options, json);
  // Every slice is checked before anything is printed.
  for (const auto* t : chosen) {
    if (t->item->type == kArrayTree && t->leaf.kind == cairn::LeafKind::array) {
      (void)parse_slice(options.slice, t->leaf.shape, t->name);
    }
  }
  const Progress progress(!options.quiet && !options.json, comm.is_primary());
  if (options.json) {
    json.begin_object();
    json.key("checkpoint");
    json.value(boost::json::string(options.checkpoint));
    json.key("leaves");
    json.begin_array();
    json.line_break();
  }
  for (const auto* t : chosen) dump_target(comm, *t, options, json, progress);
  if (options.json) {
    json.end_array();
    json.key("notes");
    json.value(boost::json::value_from(notes));
    json.end_object();
  } else if (comm.is_primary()) {
    for (const auto& note : notes) fmt::print("({})\n", note);
  }
  return kOk;
}

}  // namespace cairn_tool
