/* Uses an installed cairn from C: wraps MPI_COMM_WORLD in a cairn_comm, checks that it agrees
 * with MPI and that the header and library versions match, and prints what it sees. Exits
 * non-zero on any mismatch. */
#include <cairn/cairn.h>

#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
  int status = 1;
  int rank = -1;
  int size = 0;
  int cairn_rank = -2;
  int cairn_size = -1;
  cairn_comm* comm = NULL;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (cairn_comm_create(MPI_COMM_WORLD, &comm) != CAIRN_OK ||
      cairn_comm_rank(comm, &cairn_rank) != CAIRN_OK ||
      cairn_comm_size(comm, &cairn_size) != CAIRN_OK) {
    fprintf(stderr, "c consumer: %s\n", cairn_last_error());
  } else if (cairn_rank != rank || cairn_size != size) {
    fprintf(stderr, "c consumer: cairn says rank %d of %d, MPI says %d of %d\n", cairn_rank,
            cairn_size, rank, size);
  } else if (strcmp(cairn_version(NULL, NULL, NULL), CAIRN_VERSION_STRING) != 0) {
    fprintf(stderr, "c consumer: library %s, header %s\n", cairn_version(NULL, NULL, NULL),
            CAIRN_VERSION_STRING);
  } else {
    printf("c consumer: rank %d of %d, cairn %s\n", rank, size, CAIRN_VERSION_STRING);
    status = 0;
  }
  cairn_comm_free(comm);
  MPI_Finalize();
  return status;
}
