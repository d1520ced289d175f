// cairn — named fault points for tests (internal).
//
// A build configured with CAIRN_FAULT_INJECTION=ON reads the environment variable CAIRN_FAULT
// once: a comma-separated list of `<point>@<rank>[:<action>][#<n>[+]]`.
//   <rank>    rank of MPI_COMM_WORLD, or `*` for every rank;
//   <action>  none: point() throws IoError ("injected fault at <point>");
//             `kill`: SIGKILLs the process;
//             `errno=<E>` (E one of ENOSPC, EIO, EDQUOT or a number): error_at() returns E,
//             as if the system call at that point had failed with it (point() ignores it);
//             `stall=<ms>`: point() sleeps <ms> milliseconds, then returns (a write that
//             blocks on a hung file system for a while);
//   #<n>      only the n-th time the point is reached on that rank; `#<n>+`: from the n-th
//             time on (a disk that stays full).
// In other builds point() and error_at() do nothing.
//
// The points, in the order a save reaches them ("primary" ones are reached by the primary
// rank only):
//   level.local_save             every rank of a manager with a local level, before its
//                                node's part of a step is written
//   level.copies                 each node's leader, its node's part committed, before the
//                                redundancy copies are exchanged
//   checkpoint.before_data       every rank, once the temporary directory exists, before any
//                                item is written
//   storage.posix_aggregate      the aggregator of each group of the posix format (with
//                                posix.aggregation), before it creates the group's file
//   storage.posix_write          every rank, before each shard of the posix format
//   storage.posix_ship           the aggregator of a group that ships (PosixAggregation::
//                                Writers::aggregator), before it writes each slot of bytes
//                                another rank shipped
//   storage.hdf5_write           every rank, before each collective dataset write of hdf5
//   storage.pwrite               every rank, in the write wrapper of every file cairn writes
//                                (shards, metadata), before pwrite, and before the space
//                                of a file the local level writes in place is allocated: an
//                                errno action here stands for a full or failing disk
//   handler.json_write           the writer of a JSON item
//   handler.bytes_write          every rank writing a bytes item
//   checkpoint.async_drain       every rank, on the background thread of an async save once
//                                its local writes returned, before the collective end
//   checkpoint.before_metadata   every rank, all data written and finished, before the
//                                primary writes the step metadata
//   checkpoint.before_rename     primary, step metadata and marker durable, before the
//                                rename of `<dir>.cairn-tmp` to `<dir>`
//   checkpoint.after_rename      primary, the rename durable, before the other ranks hear of
//                                the commit
//   manager.background_delete    primary, on the background thread of the manager's
//                                retention, after the step was renamed to
//                                `<step>.cairn-deleting`, before its files are removed
#pragma once

#include <cairn/config.hpp>

#include <string_view>

namespace cairn::base::fault {

#if CAIRN_HAVE_FAULT_INJECTION
/// Fires the fault configured for `name` on this rank, if any. Not collective. Throws
/// IoError when configured to; sleeps when configured to stall.
void point(std::string_view name);
/// The errno configured for `name` on this rank at this hit, or 0. Not collective; never
/// throws.
int error_at(std::string_view name) noexcept;
#else
inline void point(std::string_view) {}
inline int error_at(std::string_view) noexcept { return 0; }
#endif

}  // namespace cairn::base::fault
