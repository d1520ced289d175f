// cairn — the storage formats, one row each (internal). Everything the engine, the public
// storage_formats() and the tools know of a format comes from its row: its name, whether this
// build has it, which files of an item directory are its data files, how its own options are
// checked and agreed on, and how its writer and reader are opened. Each format defines its row
// in its own folder (format/<name>/row.cpp); format_table.cpp lists the rows. Nothing outside
// a format's folder names the format.
#pragma once

#include <cairn/comm.hpp>
#include <cairn/storage.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string_view>

#include "base/fnv1a.hpp"
#include "storage/format/shard_reader.hpp"
#include "storage/format/shard_writer.hpp"

namespace cairn::storage {

/// What a format's writer is opened with (open_writer of its row).
struct WriterArgs {
  const Comm& comm;                      ///< the save's ranks; outlives the writer
  const std::filesystem::path& dir;      ///< the item directory, which exists
  std::span<const ArrayToWrite> arrays;  ///< the array leaves stored in this format
  /// The non-array leaves, which a format may store for external readers; empty unless this
  /// format is the item's default format.
  std::span<const ValueToWrite> values;
  const SaveProvenance& provenance;  ///< recorded by formats that describe themselves
  const TreeSaveOptions& options;    ///< the format reads its own member (posix, hdf5)
  /// Each rank's data files start their writeback every this many bytes written
  /// (PosixFile::write_behind; 0: only at the fsync): base::kWriteBehindBytes in a save that
  /// fsyncs.
  std::uint64_t write_behind_bytes = 0;
};

/// One storage format. Every function is set, also in a build without the format (then they
/// throw Unsupported saying how to get it, and owns_data_file still answers).
struct FormatRow {
  StorageFormat format;           ///< its value of the public enum
  std::string_view name;          ///< stable name: on disk ("format" of a leaf), options, tools
  std::string_view summary;       ///< one line for tools' help and listings
  bool built;                     ///< this build writes and reads it
  std::string_view how_to_build;  ///< when not built: what to configure
  /// Whether `file` (relative to the item directory, e.g. "shards/p3.bin") is a name this
  /// format gives its data files. Never throws.
  bool (*owns_data_file)(std::string_view file) noexcept;
  /// Checks the format's own options (TreeSaveOptions::posix, ::hdf5). Local; throws
  /// InvalidArgument naming the option.
  void (*check_options)(const TreeSaveOptions& options);
  /// Adds the format's own options to `hash`, which the ranks of a save compare (they decide
  /// the collective steps that follow). Never throws.
  void (*hash_options)(const TreeSaveOptions& options, base::Fnv1a& hash) noexcept;
  /// Opens the format's writer (ShardWriter's life). Collective over args.comm, which must
  /// outlive the writer. Throws, on every rank alike, CollectiveMismatch when the ranks' lists
  /// differ, InvalidArgument for a bad path or a box outside its shape, Unsupported when this
  /// build lacks the format, IoError naming the file when it cannot be created.
  std::unique_ptr<ShardWriter> (*open_writer)(const WriterArgs& args);
  /// Opens the format's reader of the item directory `dir`. Collective over `comm`, which must
  /// outlive the reader. Throws, on every rank alike, Unsupported when this build lacks the
  /// format, NotFound when its shared file is missing, FormatError when that file is damaged,
  /// IoError otherwise. (Per-process files are opened by the first read of each.)
  std::unique_ptr<ShardReader> (*open_reader)(const Comm& comm, const std::filesystem::path& dir);
};

/// Every format, in StorageFormat order. Never throws.
[[nodiscard]] std::span<const FormatRow* const> format_rows() noexcept;

/// The row of `format`. Throws InvalidArgument for a value that names no format.
[[nodiscard]] const FormatRow& format_row(StorageFormat format);

}  // namespace cairn::storage
