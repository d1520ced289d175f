/* cairn C ABI — the communicator handle. Part of <cairn/cairn.h>, which includes every part and
 * states the conventions of the ABI (status codes, option structs, collective calls). */
#ifndef CAIRN_C_COMM_H
#define CAIRN_C_COMM_H

#include <cairn/c/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- communicator */

/* A duplicate of an MPI communicator with cairn's deadlines (cairn::Comm). */
typedef struct cairn_comm cairn_comm;

/* Duplicates `comm` into *out. Collective over `comm`; MPI must be initialized. */
CAIRN_C_API cairn_status cairn_comm_create(MPI_Comm comm, cairn_comm** out);
/* As cairn_comm_create, for a Fortran communicator handle (MPI_Comm_f2c). Collective. */
CAIRN_C_API cairn_status cairn_comm_create_f(MPI_Fint comm, cairn_comm** out);
/* This process's rank in `comm`. Not collective. */
CAIRN_C_API cairn_status cairn_comm_rank(const cairn_comm* comm, int* rank);
/* The number of ranks of `comm`. Not collective. */
CAIRN_C_API cairn_status cairn_comm_size(const cairn_comm* comm, int* size);
/* Frees the handle (objects created from it keep what they need). Not collective. */
CAIRN_C_API void cairn_comm_free(cairn_comm* comm);

#ifdef __cplusplus
}
#endif

#endif /* CAIRN_C_COMM_H */
