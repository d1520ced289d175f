// cairn — shard layouts: JSON form and the consistency check of one leaf over all ranks.
#include <cairn/layout.hpp>

#include "tree/quote.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <limits>
#include <numeric>
#include <string>

namespace cairn {
namespace {

namespace json = boost::json;

// ---- from_json helpers ------------------------------------------------------------------------

struct Reader {
  std::string_view source;
  std::string prefix;

  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    std::string message = "invalid shard layout";
    if (!source.empty()) message += " in " + tree_detail::quote(source, 200);
    message += ": field '" + field + "' " + problem +
               "; the metadata is damaged or was not written by cairn";
    throw FormatError(std::string(source), field, std::move(message));
  }

  std::int64_t integer(const json::value& v, const std::string& field) const {
    if (v.is_int64()) {
      if (v.get_int64() < 0) fail(field, "is negative (" + std::to_string(v.get_int64()) + ")");
      return v.get_int64();
    }
    if (v.is_uint64()) {
      if (v.get_uint64() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        fail(field, "is larger than an int64 (" + std::to_string(v.get_uint64()) + ")");
      return static_cast<std::int64_t>(v.get_uint64());
    }
    fail(field, "must be a non-negative integer");
  }

  std::vector<std::int64_t> integers(const json::object& o, const char* key,
                                     const std::string& field) const {
    const json::value* v = o.if_contains(key);
    if (v == nullptr) fail(field, "is missing");
    const json::array* a = v->if_array();
    if (a == nullptr) fail(field, "must be an array of integers");
    if (a->size() > kMaxDims) {
      fail(field, "has " + std::to_string(a->size()) + " dimensions; at most " +
                      std::to_string(kMaxDims) + " are allowed");
    }
    std::vector<std::int64_t> out;
    out.reserve(a->size());
    for (std::size_t k = 0; k < a->size(); ++k) {
      out.push_back(integer((*a)[k], field + "[" + std::to_string(k) + "]"));
    }
    return out;
  }
};

std::string leaf_name(std::string_view leaf) { return "leaf " + tree_detail::quote(leaf, 200); }

std::string rank_name(std::size_t rank) { return "rank " + std::to_string(rank); }

// ---- coverage -----------------------------------------------------------------------------------

// Elements of `box` clipped to `region`, counting only dimensions after `dim`.
std::int64_t cross_section(const Box& box, const Box& region, std::size_t dim) {
  std::int64_t product = 1;
  for (std::size_t k = dim + 1; k < region.rank(); ++k) {
    const std::int64_t lo = std::max(box.offset[k], region.offset[k]);
    const std::int64_t hi =
        std::min(box.offset[k] + box.extent[k], region.offset[k] + region.extent[k]);
    product *= std::max<std::int64_t>(hi - lo, 0);
  }
  return product;
}

// An uncovered box inside `region`, or nullopt when `boxes` cover it. Preconditions: the boxes
// are pairwise disjoint and each spans `region` in every dimension before `dim`, so they are
// also disjoint in the dimensions from `dim` on. Sweeps dimension `dim` with a running sum of
// cross sections and descends into the first slab that is not fully covered: O(B log B) per
// dimension for B boxes.
std::optional<Box> find_hole(const std::vector<const Box*>& boxes, const Box& region,
                             std::size_t dim) {
  if (dim == region.rank()) {
    if (boxes.empty()) return region;
    return std::nullopt;
  }
  const std::int64_t lo = region.offset[dim];
  const std::int64_t hi = lo + region.extent[dim];
  struct Event {
    std::int64_t at;
    std::int64_t delta;
  };
  std::vector<Event> events;
  events.reserve(2 * boxes.size() + 2);
  for (const Box* b : boxes) {
    const std::int64_t b_lo = std::max(b->offset[dim], lo);
    const std::int64_t b_hi = std::min(b->offset[dim] + b->extent[dim], hi);
    if (b_hi <= b_lo) continue;
    const std::int64_t section = cross_section(*b, region, dim);
    events.push_back({b_lo, section});
    events.push_back({b_hi, -section});
  }
  events.push_back({lo, 0});
  events.push_back({hi, 0});
  std::sort(events.begin(), events.end(),
            [](const Event& a, const Event& b) { return a.at < b.at; });
  const std::int64_t full = cross_section(region, region, dim);
  std::int64_t covered = 0;
  for (std::size_t e = 0; e < events.size();) {
    const std::int64_t at = events[e].at;
    for (; e < events.size() && events[e].at == at; ++e) covered += events[e].delta;
    if (e == events.size() || at >= hi) break;
    const std::int64_t next = events[e].at;
    if (covered < full) {
      Box slab = region;
      slab.offset[dim] = at;
      slab.extent[dim] = next - at;
      std::vector<const Box*> active;
      for (const Box* b : boxes) {
        if (b->offset[dim] <= at && b->offset[dim] + b->extent[dim] >= next) active.push_back(b);
      }
      return find_hole(active, slab, dim + 1);
    }
  }
  return std::nullopt;
}

}  // namespace

json::value LeafLayout::to_json() const {
  json::object o;
  o["dtype"] = dtype_name(dtype);
  o["shape"] = json::value_from(global_shape);
  if (box) {
    json::object b;
    b["offset"] = json::value_from(box->offset);
    b["extent"] = json::value_from(box->extent);
    o["box"] = std::move(b);
  } else {
    o["box"] = nullptr;
  }
  o["replicated"] = replicated;
  o["fortran_order"] = fortran_order;
  return o;
}

LeafLayout LeafLayout::from_json(const json::value& value, std::string_view source,
                                 std::string_view field_prefix) {
  const Reader r{source, std::string(field_prefix)};
  const std::string p = r.prefix.empty() ? std::string() : r.prefix + ".";
  const json::object* o = value.if_object();
  if (o == nullptr) r.fail(r.prefix, "must be a JSON object");

  LeafLayout out;
  const json::value* dtype = o->if_contains("dtype");
  if (dtype == nullptr) r.fail(p + "dtype", "is missing");
  if (!dtype->is_string()) r.fail(p + "dtype", "must be a string");
  const auto parsed = dtype_from_name(dtype->get_string());
  if (!parsed) {
    r.fail(p + "dtype", "names an unknown dtype " + tree_detail::quote(dtype->get_string()));
  }
  out.dtype = *parsed;

  out.global_shape = r.integers(*o, "shape", p + "shape");
  try {
    (void)volume(out.global_shape);
  } catch (const InvalidArgument&) {
    r.fail(p + "shape",
           shape_to_string(out.global_shape) + " has more elements than an int64 can count");
  }

  const json::value* box = o->if_contains("box");
  if (box == nullptr) r.fail(p + "box", "is missing (use null for no shard)");
  if (!box->is_null()) {
    const json::object* b = box->if_object();
    if (b == nullptr) r.fail(p + "box", "must be an object with offset and extent, or null");
    Box parsed_box{r.integers(*b, "offset", p + "box.offset"),
                   r.integers(*b, "extent", p + "box.extent")};
    if (auto problem = box_problem(parsed_box, out.global_shape)) {
      r.fail(p + "box", to_string(parsed_box) + " does not fit the shape " +
                            shape_to_string(out.global_shape) + ": " + *problem);
    }
    out.box = std::move(parsed_box);
  }

  const json::value* replicated = o->if_contains("replicated");
  if (replicated == nullptr) r.fail(p + "replicated", "is missing");
  if (!replicated->is_bool()) r.fail(p + "replicated", "must be true or false");
  out.replicated = replicated->get_bool();

  if (const json::value* order = o->if_contains("fortran_order")) {
    if (!order->is_bool()) r.fail(p + "fortran_order", "must be true or false");
    out.fortran_order = order->get_bool();
  }
  return out;
}

namespace {

// Throws CollectiveMismatch naming the first rank whose description of the global array (dtype,
// shape, replicated, order) differs from rank 0's.
void check_ranks_agree(const std::string& name, std::span<const LeafLayout> per_rank) {
  const LeafLayout& ref = per_rank[0];
  for (std::size_t r = 1; r < per_rank.size(); ++r) {
    const LeafLayout& l = per_rank[r];
    const std::string head = name + ": " + rank_name(r) + " has ";
    const std::string tail = "; every rank must describe the same global array";
    if (l.dtype != ref.dtype) {
      throw CollectiveMismatch(static_cast<int>(r), "dtype",
                               head + "dtype " + std::string(dtype_name(l.dtype)) +
                                   " but rank 0 has " + std::string(dtype_name(ref.dtype)) + tail);
    }
    if (l.global_shape != ref.global_shape) {
      throw CollectiveMismatch(static_cast<int>(r), "global_shape",
                               head + "global shape " + shape_to_string(l.global_shape) +
                                   " but rank 0 has " + shape_to_string(ref.global_shape) + tail);
    }
    if (l.replicated != ref.replicated) {
      throw CollectiveMismatch(
          static_cast<int>(r), "replicated",
          name + ": " + rank_name(r) + (l.replicated ? " marks" : " does not mark") +
              " it replicated but rank 0 " + (ref.replicated ? "does" : "does not") + tail);
    }
    if (l.fortran_order != ref.fortran_order) {
      throw CollectiveMismatch(static_cast<int>(r), "fortran_order",
                               name + ": " + rank_name(r) +
                                   (l.fortran_order ? " marks" : " does not mark") +
                                   " it a Fortran (column-major) array but rank 0 " +
                                   (ref.fortran_order ? "does" : "does not") + tail);
    }
  }
}

// A replicated leaf: every holder must hold the whole array; the lowest holder writes it.
void summarize_replicated(const std::string& name, std::span<const LeafLayout> per_rank,
                          const std::vector<std::size_t>& holders, const Box& whole,
                          LayoutSummary& summary) {
  for (const std::size_t r : holders) {
    if (*per_rank[r].box != whole) {
      throw InvalidArgument(name + " is replicated, but " + rank_name(r) + " holds the box " +
                            to_string(*per_rank[r].box) + " instead of the whole array " +
                            to_string(whole) +
                            "; give the whole array or do not mark the leaf replicated");
    }
  }
  if (!holders.empty()) {
    summary.writers.push_back(static_cast<int>(holders.front()));
    summary.covered_volume = summary.global_volume;
  }
}

// A distributed leaf: the holders' boxes must be disjoint; every holder writes its own box.
void summarize_distributed(const std::string& name, std::span<const LeafLayout> per_rank,
                           const std::vector<std::size_t>& holders, bool zero_d,
                           LayoutSummary& summary) {
  // Sorting by the first offset lets the inner loop stop at the first box that starts after
  // box i ends, which makes the usual slab and grid decompositions close to linear.
  std::vector<std::size_t> order = holders;
  if (!zero_d) {
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return per_rank[a].box->offset[0] < per_rank[b].box->offset[0];
    });
  }
  for (std::size_t i = 0; i < order.size(); ++i) {
    const Box& a = *per_rank[order[i]].box;
    for (std::size_t j = i + 1; j < order.size(); ++j) {
      const Box& b = *per_rank[order[j]].box;
      if (!zero_d && b.offset[0] >= a.offset[0] + a.extent[0]) break;
      if (const auto common = intersect(a, b)) {
        const std::size_t r1 = std::min(order[i], order[j]);
        const std::size_t r2 = std::max(order[i], order[j]);
        throw InvalidArgument(name + ": the shards of " + rank_name(r1) + " " +
                              to_string(*per_rank[r1].box) + " and " + rank_name(r2) + " " +
                              to_string(*per_rank[r2].box) + " overlap in " + to_string(*common) +
                              "; give each element to one rank, or mark the leaf replicated "
                              "if every rank holds the whole array");
      }
    }
  }
  for (const std::size_t r : holders) {
    summary.writers.push_back(static_cast<int>(r));
    summary.covered_volume += volume(*per_rank[r].box);  // disjoint: sum <= global volume
  }
}

}  // namespace

LayoutSummary validate_layout(std::string_view leaf, std::span<const LeafLayout> per_rank,
                              bool allow_sparse) {
  const std::string name = leaf_name(leaf);
  if (per_rank.empty()) {
    throw InvalidArgument("validate_layout: no rank describes " + name);
  }
  check_ranks_agree(name, per_rank);
  const LeafLayout& ref = per_rank[0];

  LayoutSummary summary;
  const std::vector<std::int64_t>& shape = ref.global_shape;
  try {
    summary.global_volume = volume(shape);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(name + ": invalid global shape: " + e.what());
  }
  const Box whole = whole_box(shape);

  std::vector<std::size_t> holders;  // ranks with a non-empty shard, ascending
  for (std::size_t r = 0; r < per_rank.size(); ++r) {
    const auto& box = per_rank[r].box;
    if (!box) continue;
    check_box_in_shape(*box, shape, name + " on " + rank_name(r));
    if (!is_empty(*box)) holders.push_back(r);
  }

  if (ref.replicated) {
    summarize_replicated(name, per_rank, holders, whole, summary);
  } else {
    summarize_distributed(name, per_rank, holders, shape.empty(), summary);
  }

  if (!allow_sparse && summary.covered_volume < summary.global_volume) {
    std::vector<const Box*> boxes;
    if (!ref.replicated) {
      for (const std::size_t r : holders) boxes.push_back(&*per_rank[r].box);
    }
    const auto hole = find_hole(boxes, whole, 0);
    throw InvalidArgument(
        name + ": the shards cover " + std::to_string(summary.covered_volume) + " of " +
        std::to_string(summary.global_volume) + " elements of the global shape " +
        shape_to_string(shape) + "; no rank holds the region " +
        (hole ? to_string(*hole) : std::string("(not located)")) +
        ". Give every element to a rank, or allow sparse leaves if holes are intended");
  }
  return summary;
}

}  // namespace cairn
