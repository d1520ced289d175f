// Built with `c++ -std=c++20 main.cpp $(pkg-config --cflags --libs cairn)` and nothing else:
// checks that cairn.pc names everything a program needs to compile, link and run.
#include <mpi.h>

#include <cairn/comm.hpp>
#include <cairn/config.hpp>

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  try {
    cairn::Comm comm(MPI_COMM_WORLD);
    std::printf("pkg-config consumer: rank %d of %d, cairn %s\n", comm.rank(), comm.size(),
                CAIRN_VERSION_STRING);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pkg-config consumer: %s\n", e.what());
    status = 1;
  }
  MPI_Finalize();
  return status;
}
