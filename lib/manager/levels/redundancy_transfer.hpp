// cairn — how the redundancy of the node-local level moves bytes between node leaders
// (internal): point-to-point transfers of archives and copies, and XOR reductions over a group.
// Used by levels/redundancy.cpp. Every wait polls with the deadline CommOptions::barrier_timeout
// of `leaders` and throws TimeoutError naming the node or group that did not take part; the
// buffers of an operation abandoned by a timeout are kept alive (detail::abandon).
#pragma once

#include <mpi.h>

#include <cairn/comm.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "manager/levels/redundancy_file.hpp"
#include "manager/levels/step_archive.hpp"

namespace cairn::levels {

/// Most bytes of one message or reduction: MPI counts are int.
inline constexpr std::size_t kPieceBytes = std::size_t{256} << 20;

/// Bytes sent to node `to` with `tag`.
struct Send {
  int to = 0;
  int tag = 0;
  ArchiveBytes bytes;  // kept alive by its owner, or by the caller until transfer() returns
};
/// Bytes received from node `from` with `tag`.
struct Receive {
  int from = 0;
  int tag = 0;
  std::shared_ptr<void> owner;  // of `into`
  std::span<std::byte> into;    // filled whole
};

/// Posts every send, each range of its bytes in messages of at most kPieceBytes, then fills
/// each receive in turn: the receiver does not know where the sender's ranges end, so it posts
/// room for the rest (at most a piece) and moves on by the size of the message that came.
/// Messages between two nodes with one tag arrive in order (MPI's non-overtaking rule).
/// Collective over the nodes named in `sends` and `receives`. Throws TimeoutError, IoError
/// when MPI fails or a sender sends an empty message.
void transfer(const Comm& leaders, std::span<const Send> sends, std::span<const Receive> receives,
              std::string_view what);

/// The sub-communicator of this node's xor group (RAII). Kept allocated after a timeout, when
/// abandoned operations may still be pending on it.
class GroupComm {
 public:
  /// Splits `leaders` by group (MPI_Comm_split). Blocking, without a deadline: call it only
  /// after an exchange in which every node showed up. Throws IoError when MPI fails.
  GroupComm(const Comm& leaders, const Group& group);
  ~GroupComm();
  GroupComm(const GroupComm&) = delete;
  GroupComm& operator=(const GroupComm&) = delete;

  /// The group's communicator. Never throws.
  [[nodiscard]] MPI_Comm get() const noexcept { return comm_; }
  /// The group. Never throws.
  [[nodiscard]] const Group& group() const noexcept { return group_; }
  /// Leaves the communicator allocated at destruction (operations on it were abandoned).
  /// Never throws.
  void abandon() noexcept { abandoned_ = true; }

 private:
  Group group_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool abandoned_ = false;
};

/// What a member gives to one reduction: bytes of `source` from `offset` on, zeros past its
/// end (an empty source gives zeros).
struct Part {
  const ArchiveBytes* source = nullptr;
  std::uint64_t offset = 0;
  void copy(std::uint64_t at, std::span<std::byte> into) const { source->copy(offset + at, into); }
};

/// XORs `bytes` bytes of every member's part into `out` on the member at group position
/// `root`, whose own part is zeros (`out` must be zero there; `owner` keeps it alive). Other
/// members copy their part a piece at a time into `scratch`, which they keep between calls.
/// Collective over the group. Throws TimeoutError (the group is then abandoned), IoError.
void xor_into(const Comm& leaders, GroupComm& group, int root, const Part& mine,
              std::uint64_t bytes, const std::shared_ptr<void>& owner, std::span<std::byte> out,
              SharedBytes& scratch, std::string_view what);

/// Every member's parity at once, into `out` (`owner` keeps it alive): member i gives member
/// k its chunk chunk_in_parity(i, k, m), and zeros to itself; MPI_Reduce_scatter_block hands
/// each member the XOR of what it was given. Each round covers a piece of every chunk.
/// Collective over the group. Throws TimeoutError (the group is then abandoned), IoError.
void all_parities(const Comm& leaders, GroupComm& group, const ArchiveBytes& archive,
                  std::uint64_t chunk, const std::shared_ptr<void>& owner, std::span<std::byte> out,
                  std::string_view what);

}  // namespace cairn::levels
