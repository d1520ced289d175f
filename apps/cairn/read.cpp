#include "read.hpp"

#include <cairn/tree.hpp>

#include <algorithm>

namespace cairn_tool {

cairn::Box slab(const std::vector<std::int64_t>& shape, const cairn::Comm& comm) {
  if (shape.empty()) return {};
  cairn::Box box{std::vector<std::int64_t>(shape.size(), 0), shape};
  const std::int64_t first = shape[0] * comm.rank() / comm.size();
  box.offset[0] = first;
  box.extent[0] = shape[0] * (comm.rank() + 1) / comm.size() - first;
  return box;
}

cairn::Box rows(const cairn::Box& box, std::int64_t first, std::int64_t count) {
  cairn::Box out = box;
  out.offset[0] += first;
  out.extent[0] = count;
  return out;
}

void for_each_piece(const cairn::Comm& comm, const cairn::Box& box, std::size_t element_bytes,
                    std::uint64_t max_bytes, const std::function<void(const cairn::Box&)>& fn) {
  if (box.rank() == 0) {
    fn(box);
    return;
  }
  std::int64_t row = static_cast<std::int64_t>(element_bytes);
  for (std::size_t d = 1; d < box.rank(); ++d) row *= box.extent[d];
  const std::int64_t per_piece = std::max<std::int64_t>(
      1, static_cast<std::int64_t>(max_bytes) / std::max<std::int64_t>(row, 1));
  const std::int64_t local = (box.extent[0] + per_piece - 1) / per_piece;
  const std::int64_t pieces = comm.max(local);
  for (std::int64_t i = 0; i < pieces; ++i) {
    const std::int64_t first = std::min(i * per_piece, box.extent[0]);
    fn(rows(box, first, std::min(per_piece, box.extent[0] - first)));
  }
}

void read_box(const cairn::Comm& comm, const std::filesystem::path& dir,
              const cairn::SavedLeafInfo& leaf, const cairn::Box& box, void* dst) {
  cairn::ArrayTree tree;
  tree.add_array(leaf.path, cairn::ArrayShard{
                                .dtype = leaf.dtype,
                                .global_shape = leaf.shape,
                                .box = box,
                                .data = cairn::volume(box) == 0 && box.rank() > 0 ? nullptr : dst});
  cairn::restore_tree(comm, dir, tree);
}

}  // namespace cairn_tool
