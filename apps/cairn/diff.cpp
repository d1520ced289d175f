// cairn diff A B: compare two checkpoints leaf by leaf.
#include <boost/json.hpp>
#include <cairn/storage.hpp>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <map>

#include "checkpoint_dir.hpp"
#include "commands.hpp"
#include "progress.hpp"
#include "read.hpp"

namespace cairn_tool {
namespace {

// The report: printed line by line, or collected for --json.
struct Printer {
  const cairn::Comm& comm;
  const DiffOptions& options;
  Progress progress;
  int differences = 0;
  boost::json::array entries = {};
  void equal(const std::string& what) {
    progress.clear();
    if (options.json) {
      if (!options.brief) entries.push_back({{"what", what}, {"equal", true}});
    } else if (comm.is_primary() && !options.brief) {
      fmt::print("  {}: equal\n", what);
    }
  }
  void differs(const std::string& what, const std::string& how, boost::json::object details = {}) {
    ++differences;
    progress.clear();
    if (options.json) {
      details["what"] = what;
      details["equal"] = false;
      details["how"] = how;
      entries.push_back(std::move(details));
    } else if (comm.is_primary()) {
      fmt::print("  {}: {}\n", what, how);
    }
  }
};

template <class T>
void compare_floats(const T* a, const T* b, std::int64_t n, std::int64_t& count, double& max_abs,
                    double& max_rel) {
  for (std::int64_t i = 0; i < n; ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(T)) == 0) continue;
    ++count;
    const double x = static_cast<double>(a[i]);
    const double y = static_cast<double>(b[i]);
    const double diff = std::abs(x - y);
    const double scale = std::max(std::abs(x), std::abs(y));
    max_abs = std::isnan(diff) ? diff : std::max(max_abs, diff);
    if (scale > 0) max_rel = std::isnan(diff) ? diff : std::max(max_rel, diff / scale);
  }
}

// Counts differing elements of `n` elements of `dtype` at `pa` and `pb`, and for floating
// types the largest absolute and relative difference.
void compare_elements(cairn::DType dtype, const std::byte* pa, const std::byte* pb, std::int64_t n,
                      std::int64_t& count, double& max_abs, double& max_rel) {
  if (dtype == cairn::DType::float64) {
    compare_floats(reinterpret_cast<const double*>(pa), reinterpret_cast<const double*>(pb), n,
                   count, max_abs, max_rel);
  } else if (dtype == cairn::DType::float32) {
    compare_floats(reinterpret_cast<const float*>(pa), reinterpret_cast<const float*>(pb), n, count,
                   max_abs, max_rel);
  } else {
    const std::size_t size = cairn::dtype_size(dtype);
    for (std::int64_t i = 0; i < n; ++i) {
      if (std::memcmp(pa + i * size, pb + i * size, size) != 0) ++count;
    }
  }
}

void compare_array(const cairn::Comm& comm, const Item& a, const Item& b,
                   const cairn::SavedLeafInfo& leaf, const std::string& what, Printer& out) {
  const cairn::Box box = slab(leaf.shape, comm);
  const std::size_t size = cairn::dtype_size(leaf.dtype);
  const auto total_bytes = static_cast<std::uint64_t>(cairn::volume(box)) * size;
  std::uint64_t done = 0;
  std::int64_t count = 0;
  double max_abs = 0;
  double max_rel = 0;
  std::vector<std::byte> xa;
  std::vector<std::byte> xb;
  for_each_piece(comm, box, size, kPieceBytes / 2, [&](const cairn::Box& piece) {
    const auto elements = cairn::volume(piece);
    xa.resize(static_cast<std::size_t>(elements) * size);
    xb.resize(xa.size());
    read_box(comm, a.dir, leaf, piece, xa.data());
    read_box(comm, b.dir, leaf, piece, xb.data());
    // A 0-d array is read by every rank and compared by the primary.
    const std::int64_t n = leaf.shape.empty() ? (comm.is_primary() ? 1 : 0) : elements;
    compare_elements(leaf.dtype, xa.data(), xb.data(), n, count, max_abs, max_rel);
    done += static_cast<std::uint64_t>(elements) * size;
    out.progress.update(what, done, total_bytes, "bytes");
  });
  const std::int64_t total = comm.sum(count);
  double local[2] = {max_abs, max_rel};
  double global[2] = {0, 0};
  MPI_Allreduce(local, global, 2, MPI_DOUBLE, MPI_MAX, comm.get());
  if (total == 0) {
    out.equal(what);
    return;
  }
  const bool floating = leaf.dtype == cairn::DType::float64 || leaf.dtype == cairn::DType::float32;
  std::string how = fmt::format("{} of {} elements differ", total, cairn::volume(leaf.shape));
  boost::json::object details = {{"differing_elements", total},
                                 {"elements", cairn::volume(leaf.shape)}};
  if (floating) {
    how += fmt::format(", max abs diff {:.6g}, max rel diff {:.6g}", global[0], global[1]);
    // NaN is not a JSON number.
    const auto number = [](double v) {
      return std::isfinite(v) ? boost::json::value(v) : boost::json::value(nullptr);
    };
    details["max_abs_diff"] = number(global[0]);
    details["max_rel_diff"] = number(global[1]);
  }
  out.differs(what, how, std::move(details));
}

boost::json::value value_of(const cairn::Leaf& leaf) {
  switch (leaf.kind()) {
    case cairn::LeafKind::scalar: return leaf.as_scalar().to_json();
    case cairn::LeafKind::string: return boost::json::string(leaf.as_string());
    default: return leaf.as_json();
  }
}

void compare_trees(const cairn::Comm& comm, const Item& a, const Item& b, const std::string& prefix,
                   Printer& out) {
  const auto ia = cairn::read_tree_info(comm, a.dir);
  const auto ib = cairn::read_tree_info(comm, b.dir);
  std::map<std::string, const cairn::SavedLeafInfo*> la;
  std::map<std::string, const cairn::SavedLeafInfo*> lb;
  for (const auto& l : ia.leaves) la[l.path] = &l;
  for (const auto& l : ib.leaves) lb[l.path] = &l;
  std::vector<std::string> values;
  for (const auto& [path, leaf] : la) {
    const std::string what = prefix + path;
    auto it = lb.find(path);
    if (it == lb.end()) {
      out.differs(what, "only in A");
      continue;
    }
    const auto& other = *it->second;
    if (leaf->kind != other.kind) {
      out.differs(what, fmt::format("kind {} -> {}", cairn::leaf_kind_name(leaf->kind),
                                    cairn::leaf_kind_name(other.kind)));
    } else if (leaf->kind != cairn::LeafKind::array) {
      values.push_back(path);
    } else if (leaf->shape != other.shape) {
      out.differs(what, fmt::format("shape {} -> {}", cairn::shape_to_string(leaf->shape),
                                    cairn::shape_to_string(other.shape)));
    } else if (leaf->dtype != other.dtype) {
      out.differs(what, fmt::format("dtype {} -> {}", cairn::dtype_name(leaf->dtype),
                                    cairn::dtype_name(other.dtype)));
    } else {
      compare_array(comm, a, b, *leaf, what, out);
    }
  }
  for (const auto& [path, leaf] : lb) {
    if (!la.contains(path)) out.differs(prefix + path, "only in B");
  }
  if (values.empty()) return;
  const auto va = cairn::restore_tree_as_saved(comm, a.dir, {.select = values});
  const auto vb = cairn::restore_tree_as_saved(comm, b.dir, {.select = values});
  for (const auto& path : values) {
    const auto x = value_of(va.at(path));
    const auto y = value_of(vb.at(path));
    if (x == y) {
      out.equal(prefix + path);
    } else {
      out.differs(prefix + path,
                  fmt::format("{} -> {}", boost::json::serialize(x), boost::json::serialize(y)));
    }
  }
}

void compare_files(const std::filesystem::path& a, const std::filesystem::path& b,
                   const std::string& what, Printer& out) {
  const auto fa = read_json_file(a);
  const auto fb = read_json_file(b);
  if (!fa.value || !fb.value) {
    out.differs(what, !fa.value ? fa.error : fb.error);
  } else if (*fa.value == *fb.value) {
    out.equal(what);
  } else {
    out.differs(what, "the values differ");
  }
}

}  // namespace

int run_diff(const cairn::Comm& comm, const DiffOptions& options, JsonStream& json) {
  const Checkpoint a = read_checkpoint(options.a);
  const Checkpoint b = read_checkpoint(options.b);
  for (const auto* c : {&a, &b}) {
    if (c->items.empty()) {
      throw CommandError(fmt::format("no item found in '{}'{}", c->path.string(),
                                     c->problems.empty() ? "" : ": " + c->problems.front()));
    }
  }
  if (comm.is_primary() && !options.json) {
    fmt::print("comparing {} (A) with {} (B)\n", options.a, options.b);
  }
  Printer out{comm, options, Progress(!options.quiet && !options.json, comm.is_primary())};
  std::map<std::string, const Item*> ib;
  for (const auto& item : b.items) ib[item.name] = &item;
  for (const auto& item : a.items) {
    const std::string prefix = item.name.empty() ? "" : item.name + "/";
    auto it = ib.find(item.name);
    if (it == ib.end()) {
      out.differs(item.label(), "item only in A");
      continue;
    }
    const Item& other = *it->second;
    if (item.type != other.type) {
      out.differs(item.label(), fmt::format("item type {} -> {}", item.type, other.type));
    } else if (item.type == kArrayTree) {
      compare_trees(comm, item, other, prefix, out);
    } else if (item.type == kJson) {
      compare_files(item.dir / "value.json", other.dir / "value.json", item.label(), out);
    } else if (item.type == kBytes) {
      compare_files(item.dir / "cairn-bytes.json", other.dir / "cairn-bytes.json",
                    item.label() + " (checksums)", out);
    } else {
      out.differs(item.label(), "item type " + item.type + " cannot be compared by this tool");
    }
  }
  for (const auto& item : b.items) {
    if (std::none_of(a.items.begin(), a.items.end(),
                     [&](const Item& x) { return x.name == item.name; })) {
      out.differs(item.label(), "item only in B");
    }
  }
  if (comm.is_primary() && options.json) {
    const boost::json::object report = {{"a", options.a},
                                        {"b", options.b},
                                        {"differences", out.differences},
                                        {"leaves", std::move(out.entries)}};
    json.document(report);
  } else if (comm.is_primary()) {
    fmt::print("{}\n", out.differences == 0 ? "no differences"
                                            : fmt::format("{} difference{}", out.differences,
                                                          out.differences == 1 ? "" : "s"));
  }
  return out.differences == 0 ? kOk : kFound;
}

}  // namespace cairn_tool
