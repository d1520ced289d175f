/* cairn C ABI — version, export macro, status codes and element types. Part of <cairn/cairn.h>,
 * which includes every part and states the conventions of the ABI (status codes, option structs,
 * collective calls). */
#ifndef CAIRN_C_COMMON_H
#define CAIRN_C_COMMON_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- version and export */

#define CAIRN_VERSION_MAJOR 0        /* major version of this header */
#define CAIRN_VERSION_MINOR 1        /* minor version of this header */
#define CAIRN_VERSION_PATCH 0        /* patch version of this header */
#define CAIRN_VERSION_STRING "0.1.0" /* "major.minor.patch" of this header */

/* CAIRN_C_API marks the functions libcairn_c exports; everything else it contains is hidden. */
#if defined(_WIN32)
#if defined(CAIRN_C_BUILDING)
#define CAIRN_C_API __declspec(dllexport)
#else
#define CAIRN_C_API __declspec(dllimport)
#endif
#elif defined(__GNUC__) && __GNUC__ >= 4
#define CAIRN_C_API __attribute__((visibility("default")))
#else
#define CAIRN_C_API
#endif

/* The library's version ("0.1.0"); stores the numbers where the pointers are not NULL.
 * Never fails. Compare with the CAIRN_VERSION_* macros to detect a header/library mismatch. */
CAIRN_C_API const char* cairn_version(int* major, int* minor, int* patch);

/* ---------------------------------------------------------------- status and errors */

/* Status of every call. The values 1..8 are those of cairn::ErrorCode (cairn/error.hpp). */
typedef int cairn_status;
enum {
  CAIRN_OK = 0,
  CAIRN_ERR_INVALID_ARGUMENT = 1,    /* bad argument: NULL, wrong size, unknown dtype ... */
  CAIRN_ERR_IO = 2,                  /* an operating-system, MPI-IO or HDF5 call failed */
  CAIRN_ERR_FORMAT = 3,              /* a file is damaged or not what cairn wrote */
  CAIRN_ERR_COLLECTIVE_MISMATCH = 4, /* ranks disagree about a collective call */
  CAIRN_ERR_TIMEOUT = 5,             /* a collective step missed its deadline */
  CAIRN_ERR_NOT_FOUND = 6,           /* no such step, item, leaf or file */
  CAIRN_ERR_UNSUPPORTED = 7,         /* valid, but this build or machine cannot do it */
  CAIRN_ERR_INTERNAL = 8,            /* a bug in cairn: please report the message */
  CAIRN_ERR_NO_MEMORY = 9            /* an allocation failed */
};

/* The message of the calling thread's last failed call ("" when none failed yet). Valid until
 * the thread's next failing call. A success does not clear it. Never fails. */
CAIRN_C_API const char* cairn_last_error(void);

/* What a failing call does (cairn_set_error_mode). */
enum {
  CAIRN_ERRORS_RETURN = 0, /* return the status; cairn_last_error() says why (the default) */
  CAIRN_ERRORS_FATAL = 1   /* print the message on stderr and abort the MPI job */
};

/* Sets what every later failing call of this process does, in every thread, as
 * MPI_ERRORS_ARE_FATAL does for MPI: with CAIRN_ERRORS_FATAL, a call that fails prints
 * "cairn (rank R): <cairn_last_error()>" on stderr (R: the rank in MPI_COMM_WORLD) and calls
 * MPI_Abort(MPI_COMM_WORLD, status), or abort() when MPI is not initialized or already
 * finalized; with CAIRN_ERRORS_RETURN (the default) it returns its status. Not collective:
 * each process sets its own mode (set the same one everywhere). CAIRN_ERR_INVALID_ARGUMENT
 * for another value, which leaves the mode as it was. */
CAIRN_C_API cairn_status cairn_set_error_mode(int mode);

/* Reports a failure found outside this ABI, by a binding or wrapper built on it, as a failing
 * cairn call does (as MPI_Comm_call_errhandler does for MPI): `message` becomes the calling
 * thread's cairn_last_error() and, in CAIRN_ERRORS_FATAL, the job is aborted; otherwise
 * returns `status`. CAIRN_OK (or a NULL message with it) records nothing. Not collective.
 * The Fortran module reports its own argument checks through it. */
CAIRN_C_API cairn_status cairn_report_error(cairn_status status, const char* message);

/* Stable lower-case name of a status ("ok", "invalid argument", "I/O error", ...; "unknown
 * status" for other values). Never fails. */
CAIRN_C_API const char* cairn_status_name(cairn_status status);

/* Releases memory that cairn returned (text, step lists). NULL is ignored. */
CAIRN_C_API void cairn_free(void* memory);

/* ---------------------------------------------------------------- element types */

/* Element types (cairn::DType). The numbers are part of this ABI; the names that
 * cairn_dtype_name() returns are the ones written to checkpoint metadata. */
enum {
  CAIRN_BOOL = 0, /* one byte, 0 or 1 (C99 _Bool, Fortran logical(c_bool)) */
  CAIRN_INT8 = 1,
  CAIRN_INT16 = 2,
  CAIRN_INT32 = 3,
  CAIRN_INT64 = 4,
  CAIRN_UINT8 = 5,
  CAIRN_UINT16 = 6,
  CAIRN_UINT32 = 7,
  CAIRN_UINT64 = 8,
  CAIRN_FLOAT16 = 9,   /* IEEE binary16, as its 16-bit pattern */
  CAIRN_BFLOAT16 = 10, /* the upper 16 bits of an IEEE binary32 */
  CAIRN_FLOAT32 = 11,
  CAIRN_FLOAT64 = 12,
  CAIRN_COMPLEX64 = 13, /* float _Complex: two float32 */
  CAIRN_COMPLEX128 = 14 /* double _Complex: two float64 */
};

/* Largest number of dimensions of an array. */
#define CAIRN_MAX_DIMS 32

/* Bytes of one element of `dtype` in *size. CAIRN_ERR_INVALID_ARGUMENT for an unknown dtype. */
CAIRN_C_API cairn_status cairn_dtype_size(int dtype, size_t* size);
/* Metadata name of `dtype` ("float64"), or NULL for an unknown dtype. Never fails. */
CAIRN_C_API const char* cairn_dtype_name(int dtype);

#ifdef __cplusplus
}
#endif

#endif /* CAIRN_C_COMMON_H */
