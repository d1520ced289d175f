// cairn — what a data.h5 says about itself (internal), so that a reader handed only the file
// knows what it holds: root attributes naming the save, and each array dataset's
// decomposition.
//
// Root attributes (written by the primary, which creates the file alone):
//   cairn_version         the cairn library that wrote the file ("0.1.0")
//   cairn_format_version  the on-disk format version of the tree (cairn-tree.json's "version")
//   cairn_world_size      the number of ranks that saved the tree
//   cairn_step            the step, when the save is one step of a CheckpointManager
//   cairn_metrics         the save's metrics as a JSON object text, when it was given some
//   cairn_write_time      when the primary finished the file, every rank having written its
//                         shards (UTC, ISO 8601); the checkpoint is committed after it
// Array datasets also carry cairn_decomposition, decomposition_text().
#pragma once

#include <hdf5.h>

#include <cairn/storage.hpp>

#include <cstdint>
#include <span>
#include <string>

#include "storage/format/hdf5/handle.hpp"
#include "storage/format/shard_writer.hpp"

namespace cairn::storage::h5 {

/// The decomposition of an array of `shape` into the writers' `shards`, as compact JSON text:
/// {"grid": [2, 1], "cuts": [[0, 3, 5], [0, 4]]} when the shards are exactly the cells of a
/// grid (along each dimension the cells lie between consecutive cuts), else
/// {"shards": [{"rank": 0, "offset": [..], "extent": [..]}, ...]} in rank order (overlapping
/// or sparse shards, blocks that are not a grid). Not collective; never throws beyond
/// std::bad_alloc.
[[nodiscard]] std::string decomposition_text(std::span<const std::int64_t> shape,
                                             std::span<const RankBox> shards);

/// Writes the root attributes that name the save (all but cairn_write_time) on the open file
/// `file`. Not collective. Throws IoError naming `where`.
void write_save_attributes(hid_t file, const SaveProvenance& provenance, int world_size,
                           const Where& where);

/// Writes the root attribute cairn_write_time = the current time on the open file `file`.
/// Not collective. Throws IoError naming `where`.
void write_time_attribute(hid_t file, const Where& where);

}  // namespace cairn::storage::h5
