// Data exchange: bytes, strings and JSON values broadcast from one rank, gathered at one
// rank, or gathered at every rank; bytes sent from every rank to every rank. Strings and JSON
// travel as bytes.
#include <cairn/comm.hpp>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <cstring>
#include <fmt/format.h>

#include "comm/deadline.hpp"

namespace cairn {
namespace {

std::span<const std::byte> as_bytes(std::string_view text) {
  return {reinterpret_cast<const std::byte*>(text.data()), text.size()};
}

std::string as_string(const std::vector<std::byte>& bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

boost::json::value parse_json(const std::string& text, std::string_view what) {
  boost::system::error_code ec;
  auto value = boost::json::parse(text, ec);
  if (ec) {
    throw Error(ErrorCode::internal,
                fmt::format("{}: received JSON does not parse: {}", what, ec.message()));
  }
  return value;
}

std::vector<std::string> as_strings(std::vector<std::vector<std::byte>> all) {
  std::vector<std::string> result;
  result.reserve(all.size());
  for (const auto& bytes : all) result.push_back(as_string(bytes));
  return result;
}

std::vector<boost::json::value> as_json(const std::vector<std::string>& texts,
                                        std::string_view what) {
  std::vector<boost::json::value> result;
  result.reserve(texts.size());
  for (const auto& text : texts) result.push_back(parse_json(text, what));
  return result;
}

// A rank given by the caller, or the primary; throws InvalidArgument when it is not a rank.
int root_rank(std::optional<int> root, int primary, int size, std::string_view what) {
  const int rank = root.value_or(primary);
  if (rank < 0 || rank >= size) {
    throw InvalidArgument(fmt::format("{}: root {} is not a rank (size {})", what, rank, size));
  }
  return rank;
}

}  // namespace

std::vector<std::byte> Comm::broadcast_bytes(std::span<const std::byte> data,
                                             std::optional<int> root) const {
  check_usable("broadcast");
  const int from = root_rank(root, options_.primary_rank, size_, "broadcast");
  struct Buffers {
    std::uint64_t size = 0;
    std::vector<std::byte> data;
  };
  auto b = std::make_shared<Buffers>();
  if (rank_ == from) {
    (void)detail::checked_count(data.size(), "broadcast");
    b->size = data.size();
    b->data.assign(data.begin(), data.end());
  }
  start_and_wait(b, "broadcast (size)", [&](MPI_Request* request) {
    return MPI_Ibcast(&b->size, 1, MPI_UINT64_T, from, comm_, request);
  });
  b->data.resize(b->size);
  if (b->size > 0) {
    start_and_wait(b, "broadcast (data)", [&](MPI_Request* request) {
      return MPI_Ibcast(b->data.data(), static_cast<int>(b->size), MPI_BYTE, from, comm_, request);
    });
  }
  return std::move(b->data);
}

std::string Comm::broadcast(std::string_view text, std::optional<int> root) const {
  return as_string(broadcast_bytes(as_bytes(text), root));
}

boost::json::value Comm::broadcast_json(const boost::json::value& value,
                                        std::optional<int> root) const {
  const int from = root.value_or(options_.primary_rank);
  const std::string text = rank_ == from ? boost::json::serialize(value) : std::string();
  return parse_json(broadcast(text, root), "broadcast");
}

std::vector<std::vector<std::byte>> Comm::collect_bytes(std::span<const std::byte> data,
                                                        std::optional<int> root,
                                                        std::string_view what) const {
  check_usable(what);
  const int to = root ? root_rank(root, options_.primary_rank, size_, what) : -1;
  const bool receives = !root || rank_ == to;
  struct Buffers {
    int size = 0;
    std::vector<int> sizes;
    std::vector<int> displacements;
    std::vector<std::byte> mine;
    std::vector<std::byte> all;
  };
  auto b = std::make_shared<Buffers>();
  b->size = detail::checked_count(data.size(), what);
  b->mine.assign(data.begin(), data.end());
  b->sizes.resize(static_cast<std::size_t>(size_));
  // First every receiving rank learns each rank's size, then the bytes follow.
  start_and_wait(b, fmt::format("{} (sizes)", what), [&](MPI_Request* request) {
    return root ? MPI_Igather(&b->size, 1, MPI_INT, b->sizes.data(), 1, MPI_INT, to, comm_, request)
                : MPI_Iallgather(&b->size, 1, MPI_INT, b->sizes.data(), 1, MPI_INT, comm_, request);
  });
  if (receives) {
    b->all.resize(
        std::max<std::size_t>(detail::displacements_of(b->sizes, b->displacements, what), 1));
  }
  start_and_wait(b, fmt::format("{} (data)", what), [&](MPI_Request* request) {
    return root ? MPI_Igatherv(b->mine.data(), b->size, MPI_BYTE, b->all.data(), b->sizes.data(),
                               b->displacements.data(), MPI_BYTE, to, comm_, request)
                : MPI_Iallgatherv(b->mine.data(), b->size, MPI_BYTE, b->all.data(), b->sizes.data(),
                                  b->displacements.data(), MPI_BYTE, comm_, request);
  });
  std::vector<std::vector<std::byte>> result;
  if (!receives) return result;
  result.reserve(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    auto first = b->all.begin() + b->displacements[r];
    result.emplace_back(first, first + b->sizes[r]);
  }
  return result;
}

std::vector<std::vector<std::byte>> Comm::gather_bytes(std::span<const std::byte> data,
                                                       std::optional<int> root) const {
  return collect_bytes(data, root.value_or(options_.primary_rank), "gather");
}

std::vector<std::string> Comm::gather(std::string_view text, std::optional<int> root) const {
  return as_strings(gather_bytes(as_bytes(text), root));
}

std::vector<boost::json::value> Comm::gather_json(const boost::json::value& value,
                                                  std::optional<int> root) const {
  return as_json(gather(boost::json::serialize(value), root), "gather");
}

std::vector<std::vector<std::byte>> Comm::allgather_bytes(std::span<const std::byte> data) const {
  return collect_bytes(data, std::nullopt, "allgather");
}

std::vector<std::string> Comm::allgather(std::string_view text) const {
  return as_strings(allgather_bytes(as_bytes(text)));
}

std::vector<boost::json::value> Comm::allgather_json(const boost::json::value& value) const {
  return as_json(allgather(boost::json::serialize(value)), "allgather");
}

std::vector<std::int64_t> Comm::allgather(std::int64_t value) const {
  check_usable("allgather");
  struct Buffers {
    std::int64_t mine;
    std::vector<std::int64_t> all;
  };
  auto b = std::make_shared<Buffers>();
  b->mine = value;
  b->all.resize(static_cast<std::size_t>(size_));
  start_and_wait(b, "allgather (integers)", [&](MPI_Request* request) {
    return MPI_Iallgather(&b->mine, 1, MPI_INT64_T, b->all.data(), 1, MPI_INT64_T, comm_, request);
  });
  return b->all;
}

std::vector<std::vector<std::byte>> Comm::alltoall_bytes(
    std::span<const std::vector<std::byte>> to_each) const {
  check_usable("alltoall");
  if (to_each.size() != static_cast<std::size_t>(size_)) {
    throw InvalidArgument(
        fmt::format("alltoall: {} byte strings for {} ranks", to_each.size(), size_));
  }
  struct Buffers {
    std::vector<int> send_sizes;
    std::vector<int> send_displacements;
    std::vector<std::byte> sent;
    std::vector<int> sizes;
    std::vector<int> displacements;
    std::vector<std::byte> all;
  };
  auto b = std::make_shared<Buffers>();
  for (const auto& bytes : to_each) {
    b->send_sizes.push_back(detail::checked_count(bytes.size(), "alltoall"));
  }
  b->sent.resize(std::max<std::size_t>(
      detail::displacements_of(b->send_sizes, b->send_displacements, "alltoall"), 1));
  for (std::size_t r = 0; r < to_each.size(); ++r) {
    std::copy(to_each[r].begin(), to_each[r].end(), b->sent.begin() + b->send_displacements[r]);
  }
  b->sizes.resize(static_cast<std::size_t>(size_));
  // First every rank learns what each rank sends it, then the bytes follow.
  start_and_wait(b, "alltoall (sizes)", [&](MPI_Request* request) {
    return MPI_Ialltoall(b->send_sizes.data(), 1, MPI_INT, b->sizes.data(), 1, MPI_INT, comm_,
                         request);
  });
  b->all.resize(
      std::max<std::size_t>(detail::displacements_of(b->sizes, b->displacements, "alltoall"), 1));
  start_and_wait(b, "alltoall (data)", [&](MPI_Request* request) {
    return MPI_Ialltoallv(b->sent.data(), b->send_sizes.data(), b->send_displacements.data(),
                          MPI_BYTE, b->all.data(), b->sizes.data(), b->displacements.data(),
                          MPI_BYTE, comm_, request);
  });
  std::vector<std::vector<std::byte>> result;
  result.reserve(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    auto first = b->all.begin() + b->displacements[r];
    result.emplace_back(first, first + b->sizes[r]);
  }
  return result;
}

std::vector<std::int64_t> Comm::common_steps(std::span<const std::int64_t> local_steps) const {
  std::vector<std::int64_t> mine(local_steps.begin(), local_steps.end());
  std::sort(mine.begin(), mine.end());
  mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
  const std::span<const std::byte> bytes{reinterpret_cast<const std::byte*>(mine.data()),
                                         mine.size() * sizeof(std::int64_t)};
  std::vector<std::int64_t> common = mine;
  for (const auto& theirs_bytes : allgather_bytes(bytes)) {
    std::vector<std::int64_t> theirs(theirs_bytes.size() / sizeof(std::int64_t));
    if (!theirs.empty()) {
      std::memcpy(theirs.data(), theirs_bytes.data(), theirs.size() * sizeof(std::int64_t));
    }
    std::vector<std::int64_t> both;
    std::set_intersection(common.begin(), common.end(), theirs.begin(), theirs.end(),
                          std::back_inserter(both));
    common = std::move(both);
  }
  return common;
}

}  // namespace cairn
