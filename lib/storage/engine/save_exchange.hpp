// cairn — what the ranks of a save exchange when it is planned (internal): their layouts of the
// array leaves (TreeWriter's constructor, one allgather). The shard records they send when the
// index is written are packed by index/record_packing.hpp.
#pragma once

#include <cairn/layout.hpp>
#include <cairn/tree.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "storage/index/tree_index.hpp"

namespace cairn::storage {

/// This rank's layouts of the array leaves among `leaves`, as the ranks exchange them:
/// {"table": the distinct layouts, "leaf": per array leaf its position in the table}. The
/// leaves of a tree mostly share a few layouts (every leaf of a shape has the same box), so
/// what a rank receives grows with ranks x distinct layouts plus a small number per leaf, not
/// with ranks x leaves x a layout. Not collective; never throws beyond std::bad_alloc.
[[nodiscard]] boost::json::object layouts_to_exchange(const std::vector<const Leaf*>& leaves);

/// Every rank's layouts of the array leaves, as every rank sent them (layouts_to_exchange()):
/// each rank's table parsed once and, per leaf, its position there, so that the layouts of
/// one leaf are made when it is validated, not those of every leaf at once.
class ExchangedLayouts {
 public:
  /// `all`: what each rank sent, in rank order; `leaves`: the number of array leaves. Not
  /// collective. Throws FormatError naming the rank for a bad entry.
  ExchangedLayouts(const std::vector<boost::json::value>& all, std::size_t leaves);
  /// Every rank's layout of array leaf `i`, in rank order. Never throws beyond std::bad_alloc.
  [[nodiscard]] std::vector<LeafLayout> of_leaf(std::size_t i) const;

 private:
  std::vector<std::vector<LeafLayout>> tables_;        // per rank: its distinct layouts
  std::vector<std::vector<std::uint32_t>> positions_;  // per rank, per leaf: in its table
};

}  // namespace cairn::storage
