// Helpers shared by cairn's MPI tests.
#pragma once

#include <mpi.h>

#include <filesystem>
#include <string>

namespace cairn::testing {

/// Rank and size of MPI_COMM_WORLD.
int world_rank();
int world_size();

/// A fresh directory visible to every rank, created by rank 0 and removed (after a barrier)
/// when the object is destroyed. Collective over MPI_COMM_WORLD.
class SharedTempDir {
 public:
  SharedTempDir();
  ~SharedTempDir();
  SharedTempDir(const SharedTempDir&) = delete;
  SharedTempDir& operator=(const SharedTempDir&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  [[nodiscard]] std::filesystem::path operator/(const std::string& name) const {
    return path_ / name;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace cairn::testing
