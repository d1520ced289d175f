// MPI for the lifetime of a program's main(): shared by cairn's command-line programs.
// Header-only, on MPI alone.
#pragma once

#include <mpi.h>

namespace cairn_app {

/// Initialises MPI with MPI_THREAD_MULTIPLE (cairn's async saves need it) and finalizes it
/// when destroyed, so every return from main() finalizes. Collective over MPI_COMM_WORLD;
/// a failed MPI_Init_thread aborts as MPI's error handler decides.
class MpiSession {
 public:
  MpiSession(int& argc, char**& argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  }
  ~MpiSession() { MPI_Finalize(); }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  /// This process's rank in MPI_COMM_WORLD.
  [[nodiscard]] int rank() const { return rank_; }

 private:
  int rank_ = 0;
};

}  // namespace cairn_app
