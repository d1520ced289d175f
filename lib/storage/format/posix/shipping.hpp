// cairn — shipping shards through node shared memory to a group's aggregator (internal), for
// PosixAggregation::Writers::aggregator. The aggregator creates a POSIX shared-memory segment
// with one ring of slots per other rank of its group; each of those ranks copies its shard
// bytes into its ring, each slot with its offset in the group's file, and the aggregator
// writes the slots to the file as they fill. The rings are plain memory with atomic counters
// and nothing here calls MPI, so shipping runs on the threads that write (an async save's
// background thread, at any MPI thread level). Every wait ends after the plan's timeout.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace cairn::storage {

/// A rank of a group other than its aggregator, and its region of the group's file.
struct ShippingMember {
  int rank = 0;
  std::uint64_t base = 0;
  std::uint64_t limit = 0;
};

/// How one group ships: the same on every rank of the group.
struct ShippingPlan {
  /// Name of the shared-memory segment ("/cairn-<hash>-<group>"), unique to the item
  /// directory and the group.
  std::string segment = {};
  /// The group's file (for messages).
  std::string file = {};
  /// The rank of the aggregator.
  int aggregator = 0;
  /// The other ranks of the group, in rank order.
  std::vector<ShippingMember> members = {};
  /// The longest either side waits for the other.
  std::chrono::milliseconds timeout = {};
};

/// One rank's view of a group's segment: the aggregator's (create()) or a member's (attach()).
class ShippingRing {
 public:
  /// The aggregator creates and maps the segment (replacing a leftover of the same name), with
  /// rings of about `ring_bytes` in all: four slots per member of 16 KiB to 8 MiB each, so at
  /// least 68 KiB per member with its control page. Local.
  /// Throws IoError naming the segment when it cannot be created, sized or mapped.
  [[nodiscard]] static std::unique_ptr<ShippingRing> create(const ShippingPlan& plan,
                                                            std::size_t ring_bytes);
  /// Member `member` (its position in plan.members) maps the segment the aggregator created.
  /// Local. Throws IoError naming the segment when it is missing, cannot be mapped or is not
  /// laid out for this plan.
  [[nodiscard]] static std::unique_ptr<ShippingRing> attach(const ShippingPlan& plan, int member);
  /// Unmaps the segment. A member that did not finish() is marked abandoned (the aggregator
  /// stops waiting for it); an aggregator marks the segment gone (members stop shipping), and
  /// removes its name if unlink() was not called. Never throws.
  ~ShippingRing();
  ShippingRing(const ShippingRing&) = delete;
  ShippingRing& operator=(const ShippingRing&) = delete;

  /// The aggregator removes the segment's name once every member mapped it, so that nothing is
  /// left in /dev/shm whatever happens next. Local; never throws.
  void unlink() noexcept;

  /// A member copies `data`, the bytes at `offset` of the group's file, into its ring, waiting
  /// for free slots. Local; one thread at a time. Throws IoError naming the file when the
  /// aggregator failed or left, TimeoutError naming the aggregator when no slot frees within
  /// the timeout.
  void ship(std::uint64_t offset, std::span<const std::byte> data);
  /// A member hands over its last slot and says it has no more. Local; never waits or throws.
  void finish();

  /// Where the aggregator writes what it receives: (member rank, file offset, bytes).
  using Sink = std::function<void(int rank, std::uint64_t offset, std::span<const std::byte>)>;
  /// The aggregator hands every filled slot to `sink`, without waiting. Returns whether every
  /// member has finished and been drained. Local. Throws what `sink` throws (the segment is
  /// then marked failed), IoError naming the file for a slot outside its member's region.
  bool drain(const Sink& sink);
  /// drain() until every member has finished. Local. Throws as drain(), TimeoutError naming
  /// the members that did not finish within the timeout of the last slot received.
  void drain_all(const Sink& sink);
  /// The aggregator gives up (its own writes failed): members' next waits throw. Never throws.
  void fail() noexcept;
  /// The bytes of one slot. Never throws.
  [[nodiscard]] std::size_t slot_bytes() const noexcept;

 private:
  struct Mapping;
  ShippingRing(ShippingPlan plan, int member, std::unique_ptr<Mapping> mapping);
  // Waits for a free slot of this member's ring. Throws as ship().
  void wait_for_slot();
  // Hands the open slot to the aggregator.
  void publish();

  ShippingPlan plan_;
  int member_ = -1;  // -1: the aggregator
  std::unique_ptr<Mapping> mapping_;
  bool unlinked_ = false;
  // Member: the slot being filled.
  bool open_ = false;
  std::uint64_t open_offset_ = 0;
  std::uint64_t open_bytes_ = 0;
  bool finished_ = false;
  // Aggregator: slots consumed and whether each member is done.
  std::vector<std::uint64_t> consumed_;
  std::vector<bool> done_;
};

/// Bytes this process has copied into rings as a member, and written from rings as an
/// aggregator, since it started (for tests and diagnostics).
struct ShippedBytes {
  std::uint64_t shipped = 0;
  std::uint64_t received = 0;
};
/// The counters of ShippedBytes. Never throws.
[[nodiscard]] ShippedBytes shipped_bytes() noexcept;

}  // namespace cairn::storage
