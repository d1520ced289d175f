#include "manager/levels/redundancy_transfer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cairn/error.hpp>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "base/log.hpp"
#include "comm/deadline.hpp"
#include "comm/mpi_check.hpp"

namespace cairn::levels {
namespace {

// Nonblocking operations in flight and the buffers they use. Unless wait() saw them complete,
// the destructor abandons the buffers (detail::abandon): MPI may still use them.
class Flight {
 public:
  Flight() = default;
  ~Flight() {
    if (done_) return;
    try {
      for (auto& buffer : buffers_) detail::abandon(std::move(buffer));
    } catch (...) {
      // Out of memory: the buffers are freed under MPI; nothing better is left to do.
    }
  }
  Flight(const Flight&) = delete;
  Flight& operator=(const Flight&) = delete;

  void keep(std::shared_ptr<const void> buffer) {
    buffers_.push_back(std::const_pointer_cast<void>(std::move(buffer)));
  }
  // A request waiting on `peer` ("node 3"), which names `nodes` (empty when unknown).
  MPI_Request* add(std::string peer, std::vector<int> nodes = {}) {
    pending_.push_back({MPI_REQUEST_NULL, {}, std::move(peer), std::move(nodes)});
    return &pending_.back().request;
  }
  // The status of request `k` (in the order of add()) once wait() returned.
  [[nodiscard]] const MPI_Status& status(std::size_t k) const { return pending_.at(k).status; }
  // Waits until every request completed, polling with MPI_Test. Throws TimeoutError naming
  // the first peer still awaited when barrier_timeout passes.
  void wait(const Comm& leaders, std::string_view what);

 private:
  struct Pending {
    MPI_Request request;
    MPI_Status status;
    std::string peer;
    std::vector<int> nodes;
  };
  std::deque<Pending> pending_;  // add() hands out pointers into it
  std::vector<std::shared_ptr<void>> buffers_;
  bool done_ = false;
};

void Flight::wait(const Comm& leaders, std::string_view what) {
  const auto timeout = leaders.options().barrier_timeout;
  const Pending* late = nullptr;
  done_ = detail::poll_until(detail::Clock::now() + timeout, [&] {
    for (auto& p : pending_) {
      int complete = 0;
      detail::check_mpi(MPI_Test(&p.request, &complete, &p.status), what);
      if (complete == 0) {
        late = &p;
        return false;
      }
    }
    return true;
  });
  if (done_) return;
  throw TimeoutError(
      late->nodes,
      fmt::format("{} did not complete within {} on node {} of {}: {} did not take part. Check "
                  "that every node calls the redundancy functions of the node-local level in the "
                  "same order, or raise barrier_timeout",
                  what, detail::format_seconds(timeout), leaders.rank(), leaders.size(),
                  late->peer));
}

}  // namespace

void transfer(const Comm& leaders, std::span<const Send> sends, std::span<const Receive> receives,
              std::string_view what) {
  Flight sending;
  for (const auto& s : sends) {
    if (s.bytes.owner()) sending.keep(s.bytes.owner());
    for (const auto& part : s.bytes.parts()) {
      for (std::size_t at = 0; at < part.size(); at += kPieceBytes) {
        const int count = static_cast<int>(std::min(kPieceBytes, part.size() - at));
        detail::check_mpi(MPI_Isend(part.data() + at, count, MPI_BYTE, s.to, s.tag, leaders.get(),
                                    sending.add(fmt::format("node {}", s.to), {s.to})),
                          what);
      }
    }
  }
  for (const auto& r : receives) {
    for (std::size_t at = 0; at < r.into.size();) {
      Flight receiving;
      receiving.keep(r.owner);
      const int room = static_cast<int>(std::min(kPieceBytes, r.into.size() - at));
      detail::check_mpi(MPI_Irecv(r.into.data() + at, room, MPI_BYTE, r.from, r.tag, leaders.get(),
                                  receiving.add(fmt::format("node {}", r.from), {r.from})),
                        what);
      receiving.wait(leaders, what);
      int count = 0;
      detail::check_mpi(MPI_Get_count(&receiving.status(0), MPI_BYTE, &count), what);
      if (count <= 0) {
        throw IoError(fmt::format("node {}", r.from),
                      fmt::format("{}: node {} sent an empty message at byte {} of {}", what,
                                  r.from, at, r.into.size()));
      }
      at += static_cast<std::size_t>(count);
    }
  }
  sending.wait(leaders, what);
}

GroupComm::GroupComm(const Comm& leaders, const Group& group) : group_(group) {
  detail::check_mpi(MPI_Comm_split(leaders.get(), group.index, leaders.rank(), &comm_),
                    "splitting the leaders into xor groups");
}

GroupComm::~GroupComm() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized || abandoned_ || comm_ == MPI_COMM_NULL) return;
  if (MPI_Comm_free(&comm_) != MPI_SUCCESS) base::log::warn("levels.group_free", "result=failed");
}

void xor_into(const Comm& leaders, GroupComm& group, int root, const Part& mine,
              std::uint64_t bytes, const std::shared_ptr<void>& owner, std::span<std::byte> out,
              SharedBytes& scratch, std::string_view what) {
  const bool at_root = leaders.rank() - group.group().first == root;
  for (std::uint64_t at = 0; at < bytes; at += kPieceBytes) {
    const std::size_t count = to_size(std::min<std::uint64_t>(kPieceBytes, bytes - at));
    Flight flight;
    MPI_Request* request = flight.add("a member of " + group.group().name());
    int result = MPI_SUCCESS;
    if (at_root) {
      flight.keep(owner);
      result = MPI_Ireduce(MPI_IN_PLACE, out.data() + at, static_cast<int>(count), MPI_BYTE,
                           MPI_BXOR, root, group.get(), request);
    } else {
      if (!scratch || scratch->size() < count) scratch = std::make_shared<Bytes>(count);
      const std::span<std::byte> piece(scratch->data(), count);
      mine.copy(at, piece);
      flight.keep(scratch);
      result = MPI_Ireduce(piece.data(), nullptr, static_cast<int>(count), MPI_BYTE, MPI_BXOR, root,
                           group.get(), request);
    }
    detail::check_mpi(result, what);
    try {
      flight.wait(leaders, what);
    } catch (const TimeoutError&) {
      group.abandon();
      scratch.reset();  // abandoned with the flight
      throw;
    }
  }
}

void all_parities(const Comm& leaders, GroupComm& group, const ArchiveBytes& archive,
                  std::uint64_t chunk, const std::shared_ptr<void>& owner, std::span<std::byte> out,
                  std::string_view what) {
  const int m = group.group().size;
  const int i = leaders.rank() - group.group().first;
  const std::size_t piece = kPieceBytes / static_cast<std::size_t>(m);
  auto blocks = std::make_shared<Bytes>(to_size(std::min<std::uint64_t>(piece, chunk)) *
                                        static_cast<std::size_t>(m));
  for (std::uint64_t at = 0; at < chunk; at += piece) {
    const std::size_t count = to_size(std::min<std::uint64_t>(piece, chunk - at));
    for (int k = 0; k < m; ++k) {
      const std::span<std::byte> block(blocks->data() + count * static_cast<std::size_t>(k), count);
      if (k == i) {
        std::ranges::fill(block, std::byte{0});
      } else {
        archive.copy(chunk * static_cast<std::uint64_t>(chunk_in_parity(i, k, m)) + at, block);
      }
    }
    Flight flight;
    flight.keep(blocks);
    flight.keep(owner);
    detail::check_mpi(MPI_Ireduce_scatter_block(blocks->data(), out.data() + at,
                                                static_cast<int>(count), MPI_BYTE, MPI_BXOR,
                                                group.get(), flight.add(group.group().name())),
                      what);
    try {
      flight.wait(leaders, what);
    } catch (const TimeoutError&) {
      group.abandon();
      throw;
    }
  }
}

}  // namespace cairn::levels
