// The posix format's row of the format table: one file per writing rank (or per group of
// ranks) under shards/, each shard at its own 4 KiB-aligned offset.
#include "storage/format/format_table.hpp"
#include "storage/format/posix/aggregation.hpp"
#include "storage/format/posix/format.hpp"

namespace cairn::storage {

namespace {

void check_options(const TreeSaveOptions& options) {
  check_posix_aggregation(options.posix.aggregation);
}

void hash_options(const TreeSaveOptions& options, base::Fnv1a& hash) noexcept {
  const PosixAggregation& a = options.posix.aggregation;
  hash.i64(static_cast<std::int64_t>(a.kind))
      .i64(a.count)
      .i64(static_cast<std::int64_t>(a.writers));
}

std::unique_ptr<ShardWriter> open_writer(const WriterArgs& args) {
  return open_posix_writer(args.comm, args.dir, args.arrays, args.options.posix.aggregation,
                           args.options.posix.ring_bytes, args.write_behind_bytes);
}

std::unique_ptr<ShardReader> open_reader(const Comm&, const std::filesystem::path& dir) {
  return open_posix_reader(dir);
}

}  // namespace

const FormatRow& posix_format_row() {
  static const FormatRow row{
      .format = StorageFormat::posix,
      .name = "posix",
      .summary = "one file per writing process (or group of processes) plus the index",
      .built = true,
      .how_to_build = "",
      .owns_data_file = is_posix_data_file,
      .check_options = check_options,
      .hash_options = hash_options,
      .open_writer = open_writer,
      .open_reader = open_reader,
  };
  return row;
}

}  // namespace cairn::storage
