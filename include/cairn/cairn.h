/* cairn — the C ABI: checkpoint/restart of MPI programs from C (and, through the module
 * `cairn` built on it, from Fortran). Library: cairn::cairn_c (CMake), libcairn_c.
 *
 * Conventions
 * - C99. Every object is an opaque handle created by a `*_create` function and released by
 *   the matching `*_free` function (NULL is accepted by every `*_free`).
 * - Every function that can fail returns a status (CAIRN_OK or a CAIRN_ERR_* code);
 *   cairn_last_error() is the message of the calling thread's last failure. A NULL pointer
 *   where an object is required, a wrong size, an unknown dtype: a status and a message,
 *   never a crash. Nothing is thrown across this ABI.
 * - Arrays are row-major (C order): dims[0] is the outermost (slowest) dimension. A Fortran
 *   array a(n1, n2) is the C-order array [n2][n1] of the same bytes: pass the dims reversed
 *   (the Fortran module does that for you, as HDF5's Fortran API does).
 * - Text that cairn returns (JSON, strings, paths) is allocated with malloc and given to the
 *   caller, who releases it with cairn_free(). JSON goes in and out as text.
 * - Option structs start with `struct_size`. Fill one with its `*_init(&opts, sizeof opts)`
 *   function, then change fields: fields added in later versions are appended, and a library
 *   only reads the fields that fit in `struct_size`, so programs built against an older
 *   cairn.h keep working. A NULL options pointer means the defaults.
 * - "Collective" functions must be called by every rank of the communicator, in the same
 *   order (see the C++ API they wrap). A rank that calls a different one, or none, makes the
 *   others fail with CAIRN_ERR_COLLECTIVE_MISMATCH or CAIRN_ERR_TIMEOUT, never hang forever.
 */
#ifndef CAIRN_CAIRN_H
#define CAIRN_CAIRN_H

/* The ABI by area; each part includes what it needs. */
#include <cairn/c/checkpointer.h>
#include <cairn/c/comm.h>
#include <cairn/c/common.h>
#include <cairn/c/items.h>
#include <cairn/c/manager.h>
#include <cairn/c/multihost.h>
#include <cairn/c/options.h>
#include <cairn/c/policies.h>
#include <cairn/c/tree.h>

#endif /* CAIRN_CAIRN_H */
