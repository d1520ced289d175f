// The main() of the test job programs that scripts start under mpiexec (the kill trials, the
// full disk, the restart after a kill): MPI around the job, and one meaning of exit statuses.
// Header-only.
#pragma once

#include <mpi.h>

#include <cstdio>
#include <exception>

namespace cairn::testing {

/// Thrown by a job's body when its arguments are wrong: job_main() prints the usage, exits 2.
struct UsageError {};

/// Runs `body(argc, argv)` (after MPI_Init_thread with MPI_THREAD_MULTIPLE; MPI_Finalize after
/// it) and returns its exit status: what the body returns; 2 after printing "usage: <name>
/// <usage>" when it throws UsageError; 1 after printing "<name>: <message>" when it throws a
/// std::exception. Collective over MPI_COMM_WORLD as the body is.
template <class Body>
int job_main(int argc, char** argv, const char* name, const char* usage, Body&& body) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int code = 2;
  try {
    code = body(argc, argv);
  } catch (const UsageError&) {
    std::fprintf(stderr, "usage: %s %s\n", name, usage);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    code = 1;
  }
  MPI_Finalize();
  return code;
}

}  // namespace cairn::testing
