// Uses an installed cairn: duplicates MPI_COMM_WORLD into a cairn::Comm, checks that it
// agrees with MPI, and prints what it sees. Exits non-zero on any mismatch.
#include <mpi.h>

#include <cairn/comm.hpp>
#include <cairn/config.hpp>

#include <cstdio>
#include <exception>

namespace {

int run() {
  cairn::Comm comm(MPI_COMM_WORLD);
  int rank = -1;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (comm.rank() != rank || comm.size() != size) {
    std::fprintf(stderr, "consumer: cairn::Comm says rank %d of %d, MPI says %d of %d\n",
                 comm.rank(), comm.size(), rank, size);
    return 1;
  }
  const bool everyone = comm.all(true);
  std::printf("consumer: rank %d of %d, cairn %s, all()=%d\n", comm.rank(), comm.size(),
              CAIRN_VERSION_STRING, everyone ? 1 : 0);
  return everyone ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 1;
  try {
    status = run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
  }
  MPI_Finalize();
  return status;
}
