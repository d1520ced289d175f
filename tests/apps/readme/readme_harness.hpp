// What the harnesses of the C++ blocks of README.md and docs/*.md share: every public cairn header
// (a block's own #include lines are removed by extract_blocks.py), and run(), which initialises
// MPI, runs a block with the names it uses defined, reports an exception or a failed check on the
// failing rank and returns the exit status.
#pragma once

#include <cairn/checkpointer.hpp>
#include <cairn/handlers.hpp>
#include <cairn/manager.hpp>
#include <cairn/standard_checkpointer.hpp>
#include <cairn/storage.hpp>
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace readme {

/// Thrown by check() when a block's result is not what it should be.
struct CheckFailed : std::exception {
  explicit CheckFailed(std::string what) : message(std::move(what)) {}
  const char* what() const noexcept override { return message.c_str(); }
  std::string message;
};

/// Throws CheckFailed(`what`) unless `ok`.
inline void check(bool ok, const std::string& what) {
  if (!ok) throw CheckFailed(what);
}

/// Rank r's part [first, first + count) of n elements split over `size` ranks.
inline std::int64_t part_first(std::int64_t n, int r, int size) { return n * r / size; }
inline std::int64_t part_count(std::int64_t n, int r, int size) {
  return part_first(n, r + 1, size) - part_first(n, r, size);
}

/// Runs `block` between MPI_Init and MPI_Finalize; 0 when it returned on every rank, 1
/// otherwise (the failing rank prints why).
inline int run(int argc, char** argv, const std::function<void()>& block) {
  MPI_Init(&argc, &argv);
  int ok = 1;
  try {
    block();
  } catch (const std::exception& e) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::fprintf(stderr, "%s, rank %d: %s\n", argv[0], rank, e.what());
    ok = 0;
  }
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Finalize();
  return all == 1 ? 0 : 1;
}

}  // namespace readme
