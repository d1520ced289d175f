#include "bench_common.hpp"

#include <unistd.h>

#include <boost/json/serialize.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>

namespace bench {
namespace {

std::pair<std::int64_t, std::int64_t> split(std::int64_t n, int part, int parts) {
  const std::int64_t begin = n * part / parts;
  return {begin, n * (part + 1) / parts - begin};
}

}  // namespace

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

std::int64_t world_max(std::int64_t value) {
  MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  return value;
}

std::pair<int, int> grid_of(int size) {
  int grid_rows = 1;
  for (int d = 1; d * d <= size; ++d) {
    if (size % d == 0) grid_rows = d;
  }
  return {grid_rows, size / grid_rows};
}

cairn::Box block_of(const Shape& shape, int rank, int size) {
  const auto [grid_rows, grid_cols] = grid_of(size);
  auto [r0, rn] = split(shape.rows, rank / grid_cols, grid_rows);
  auto [c0, cn] = split(shape.cols, rank % grid_cols, grid_cols);
  return cairn::Box{{r0, c0}, {rn, cn}};
}

cairn::Box slab_of(const Shape& shape, int rank, int size) {
  auto [r0, rn] = split(shape.rows, rank, size);
  return cairn::Box{{r0, 0}, {rn, shape.cols}};
}

cairn::Box column_slab_of(const Shape& shape, int rank, int size) {
  auto [c0, cn] = split(shape.cols, rank, size);
  return cairn::Box{{0, c0}, {shape.rows, cn}};
}

cairn::Box range_of(std::int64_t n, int rank, int size) {
  auto [begin, count] = split(n, rank, size);
  return cairn::Box{{begin}, {count}};
}

double value_at(const Shape& shape, int leaf, std::int64_t i, std::int64_t j) {
  return static_cast<double>(leaf) * 1e12 + static_cast<double>(i * shape.cols + j);
}

std::vector<double> fill_box(const Shape& shape, int leaf, const cairn::Box& box) {
  std::vector<double> data(static_cast<std::size_t>(box.extent[0] * box.extent[1]));
  std::size_t k = 0;
  for (std::int64_t i = 0; i < box.extent[0]; ++i) {
    for (std::int64_t j = 0; j < box.extent[1]; ++j) {
      data[k++] = value_at(shape, leaf, box.offset[0] + i, box.offset[1] + j);
    }
  }
  return data;
}

std::int64_t count_mismatches(const Shape& shape, int leaf, const cairn::Box& box,
                              const std::vector<double>& data) {
  std::int64_t bad = 0;
  std::size_t k = 0;
  for (std::int64_t i = 0; i < box.extent[0]; ++i) {
    for (std::int64_t j = 0; j < box.extent[1]; ++j) {
      if (data[k++] != value_at(shape, leaf, box.offset[0] + i, box.offset[1] + j)) ++bad;
    }
  }
  return bad;
}

std::vector<std::vector<double>> local_blocks(const Shape& shape) {
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<std::vector<double>> blocks;
  for (int leaf = 0; leaf < shape.leaves; ++leaf) {
    blocks.push_back(fill_box(shape, leaf, block_of(shape, rank, size)));
  }
  return blocks;
}

std::vector<std::vector<double>> empty_like(const std::vector<std::vector<double>>& blocks) {
  std::vector<std::vector<double>> empty;
  for (const auto& block : blocks) empty.emplace_back(block.size(), -1.0);
  return empty;
}

std::string leaf_path(int leaf) { return "params/layer" + std::to_string(leaf) + "/w"; }

std::string meta_path(int leaf) {
  // Groups of 100 leaves, like the parameters of a deep model.
  return "params/block" + std::to_string(leaf / 100) + "/p" + std::to_string(leaf % 100);
}

cairn::StorageFormat format_named(const std::string& name) {
  auto format = cairn::storage_format_from_name(name);
  if (!format || !cairn::storage_format_available(*format)) {
    throw std::runtime_error("cairn format '" + name + "' is not available in this build");
  }
  return *format;
}

MetaTrees make_meta_trees(const Shape& shape) {
  const cairn::Box range = range_of(shape.meta_elems, world_rank(), world_size());
  const auto count = static_cast<std::size_t>(range.extent[0]);
  MetaTrees out;
  out.data.resize(count * static_cast<std::size_t>(shape.meta_leaves));
  for (std::size_t k = 0; k < out.data.size(); ++k) {
    out.data[k] = static_cast<double>(k % count) + 1e6 * static_cast<double>(k / count);
  }
  out.back.assign(out.data.size(), -1.0);
  for (int leaf = 0; leaf < shape.meta_leaves; ++leaf) {
    const std::size_t at = static_cast<std::size_t>(leaf) * count;
    out.tree.add_array(meta_path(leaf),
                       cairn::ArrayShard::host(out.data.data() + at, {shape.meta_elems}, range));
    out.target.add_array(meta_path(leaf),
                         cairn::ArrayShard::host(out.back.data() + at, {shape.meta_elems}, range));
  }
  return out;
}

MetaCase::MetaCase(const Run& run, const std::string& name, const std::string& format_name)
    : format(format_named(format_name)),
      prefix("cairn." + format_name + "."),
      world(MPI_COMM_WORLD),
      trees(make_meta_trees(run.shape)),
      dir(run.dir / ("cairn-" + name + "-" + format_name)) {
  remove_tree(dir);
}

double timed(const std::function<void()>& body) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  body();
  MPI_Barrier(MPI_COMM_WORLD);
  return MPI_Wtime() - start;
}

std::string drop_caches(bool enabled) {
  if (!enabled) return "disabled";
  std::string status = "dropped";
  if (world_rank() == 0) {
    sync();
    std::ofstream drop("/proc/sys/vm/drop_caches");
    if (drop) drop << "3\n";
    drop.flush();
    if (!drop.good()) {
      status = std::string("not permitted: writing /proc/sys/vm/drop_caches failed: ") +
               std::strerror(errno);
    }
  }
  int length = static_cast<int>(status.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
  status.resize(static_cast<std::size_t>(length));
  MPI_Bcast(status.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  return status;
}

void remove_tree(const std::filesystem::path& path) {
  if (world_rank() == 0) std::filesystem::remove_all(path);
  MPI_Barrier(MPI_COMM_WORLD);
}

void Recorder::add(const std::string& name, int rep, double seconds, std::int64_t bytes,
                   boost::json::object extra) {
  extra["name"] = name;
  extra["rep"] = rep;
  extra["seconds"] = seconds;
  extra["bytes"] = bytes;
  records_.push_back(std::move(extra));
}

void Recorder::flush() {
  if (world_rank() == 0) {
    std::ofstream out(out_, std::ios::app);
    for (const auto& record : records_) out << boost::json::serialize(record) << "\n";
  }
  records_.clear();
}

}  // namespace bench
