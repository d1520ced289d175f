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

/* ---------------------------------------------------------------- array trees */

/* An ordered tree of named leaves (cairn::ArrayTree): array shards, scalars, strings, JSON.
 * Paths look like "fields/u": components of A-Z a-z 0-9 _ . - + separated by '/'. */
typedef struct cairn_tree cairn_tree;

/* What a leaf holds (cairn_tree_leaf_kind). */
enum { CAIRN_LEAF_ARRAY = 0, CAIRN_LEAF_SCALAR = 1, CAIRN_LEAF_STRING = 2, CAIRN_LEAF_JSON = 3 };

/* Where array elements live. CAIRN_MEMORY_CUDA_DEVICE: `data` is contiguous CUDA device (or
 * managed) memory on the calling thread's current device. Whether a device is usable is checked
 * when the tree is saved or restored into, not when the leaf is added: without CUDA support in
 * this build or without a usable device, that call fails on every rank with
 * CAIRN_ERR_UNSUPPORTED naming the leaf and the reason ("no CUDA device is present", the CUDA
 * driver's error). Storage stages device memory through the host. */
enum { CAIRN_MEMORY_HOST = 0, CAIRN_MEMORY_CUDA_DEVICE = 1 };

/* Flags of cairn_tree_add_array (combine with |). */
enum {
  CAIRN_ARRAY_REPLICATED = 1, /* every rank holds the same whole array; one rank writes it */
  /* A Fortran (column-major) array passed with its dimensions reversed: global_dims, the box
   * and the data are in C order, the writer's own view is the reversed shape. No byte changes;
   * the checkpoint records it ("order": "F" in cairn-tree.json, attribute cairn_order = "F" in
   * data.h5) and every rank must agree on it when the tree is saved. The Fortran module sets
   * it on every array it adds. */
  CAIRN_ARRAY_FORTRAN_ORDER = 2
};

/* Full description of one array shard (cairn_tree_add_array_desc). */
typedef struct cairn_array_desc {
  size_t struct_size;         /* sizeof(cairn_array_desc) as the caller knows it */
  int dtype;                  /* CAIRN_FLOAT64 by default */
  int ndim;                   /* 0: a 0-d array (one element) */
  const int64_t* global_dims; /* ndim extents of the whole array */
  const int64_t* offset;      /* ndim: first index of this rank's box; NULL with local_dims
                                 NULL: the whole array */
  const int64_t* local_dims;  /* ndim: extents of this rank's box */
  const int64_t* strides;     /* ndim element strides of `data` (host memory only; a restore
                                 target's elements must be distinct); NULL: contiguous
                                 row-major */
  void* data;                 /* first element of the box; may be NULL when it is empty */
  int memory;                 /* CAIRN_MEMORY_HOST (default) or CAIRN_MEMORY_CUDA_DEVICE */
  int replicated;             /* nonzero: as CAIRN_ARRAY_REPLICATED */
  int fortran_order;          /* nonzero: as CAIRN_ARRAY_FORTRAN_ORDER (0 for a caller whose
                                 struct_size ends before this field) */
} cairn_array_desc;

/* Fills *desc with the defaults for a caller that knows `struct_size` bytes of it. */
CAIRN_C_API cairn_status cairn_array_desc_init(cairn_array_desc* desc, size_t struct_size);

/* A new empty tree in *out. */
CAIRN_C_API cairn_status cairn_tree_create(cairn_tree** out);
/* Frees the tree. Buffers the caller passed stay the caller's. */
CAIRN_C_API void cairn_tree_free(cairn_tree* tree);

/* Adds this rank's shard of a global array of `ndim` dims: global_dims, the box
 * [offset, offset + local_dims) (both NULL: the whole array), host memory `data` holding the
 * box contiguously in row-major order. cairn keeps the pointer: the buffer is read when the
 * tree is saved and written when the tree is a restore target, so it must stay valid until
 * then. `flags`: 0, or CAIRN_ARRAY_REPLICATED and/or CAIRN_ARRAY_FORTRAN_ORDER. Not
 * collective (saving checks the layout across ranks: overlapping boxes, holes, disagreeing
 * dtypes or flags). Fails with CAIRN_ERR_INVALID_ARGUMENT for a bad path, unknown dtype or
 * flags, ndim outside 0..CAIRN_MAX_DIMS, a box outside the array, a NULL array argument, or a
 * duplicate path. */
CAIRN_C_API cairn_status cairn_tree_add_array(cairn_tree* tree, const char* path, int dtype,
                                              int ndim, const int64_t* global_dims,
                                              const int64_t* offset, const int64_t* local_dims,
                                              void* data, int flags);
/* As cairn_tree_add_array with everything a shard may be: strides (host memory only) and the
 * memory kind, CAIRN_MEMORY_HOST or CAIRN_MEMORY_CUDA_DEVICE for a CUDA device pointer (see
 * the memory kinds above). Not collective. Fails as cairn_tree_add_array, and with
 * CAIRN_ERR_INVALID_ARGUMENT for a NULL desc, a struct_size never set or an unknown memory
 * kind. */
CAIRN_C_API cairn_status cairn_tree_add_array_desc(cairn_tree* tree, const char* path,
                                                   const cairn_array_desc* desc);
/* Adds an array of logicals held as `elem_size`-byte integers (1, 2, 4 or 8; nonzero is
 * true), such as Fortran's default logical (elem_size 4) or C int flags, saved as CAIRN_BOOL
 * (one byte, 0 or 1: what h5py reads as bool). `desc` is as for cairn_tree_add_array_desc
 * with dtype CAIRN_BOOL and host memory; its strides count elements. The caller's memory is
 * converted, not referenced: it is read at every save of the tree (only when a save is
 * made: a manager call whose policy skips the step converts nothing; each save converts into
 * a buffer of its own, so the caller may change the array as soon as the save returns) and
 * written at the end of every restore into the tree (1 for true, 0 for false);
 * cairn_tree_read_array reads the tree's bools (as converted when added or last restored).
 * Not collective. Fails as cairn_tree_add_array_desc, and with CAIRN_ERR_INVALID_ARGUMENT for
 * another elem_size, dtype or memory kind. */
CAIRN_C_API cairn_status cairn_tree_add_logical_array(cairn_tree* tree, const char* path,
                                                      size_t elem_size,
                                                      const cairn_array_desc* desc);
/* Adds a scalar leaf: dtype_size(dtype) bytes at `value`. */
CAIRN_C_API cairn_status cairn_tree_add_scalar(cairn_tree* tree, const char* path, int dtype,
                                               const void* value);
/* Adds a string leaf (NUL-terminated UTF-8). */
CAIRN_C_API cairn_status cairn_tree_add_string(cairn_tree* tree, const char* path,
                                               const char* value);
/* Adds a JSON leaf from its text. CAIRN_ERR_INVALID_ARGUMENT (with the parser's message) when
 * the text is not JSON. */
CAIRN_C_API cairn_status cairn_tree_add_json(cairn_tree* tree, const char* path,
                                             const char* json_text);

/* Number of leaves in *count. */
CAIRN_C_API cairn_status cairn_tree_leaf_count(const cairn_tree* tree, size_t* count);
/* The path of leaf `index` (insertion order) in *path, to be freed with cairn_free().
 * CAIRN_ERR_NOT_FOUND when index >= the count. */
CAIRN_C_API cairn_status cairn_tree_leaf_path(const cairn_tree* tree, size_t index, char** path);
/* What the leaf `path` holds (*kind = CAIRN_LEAF_*); CAIRN_ERR_NOT_FOUND when there is none. */
CAIRN_C_API cairn_status cairn_tree_leaf_kind(const cairn_tree* tree, const char* path, int* kind);
/* Describes an array leaf: dtype, ndim, and (when not NULL, each of `capacity` elements)
 * global_dims, offset and local_dims of this rank's box; *replicated when not NULL.
 * CAIRN_ERR_INVALID_ARGUMENT when ndim > capacity or the leaf is not an array. */
CAIRN_C_API cairn_status cairn_tree_array_info(const cairn_tree* tree, const char* path, int* dtype,
                                               int* ndim, int capacity, int64_t* global_dims,
                                               int64_t* offset, int64_t* local_dims,
                                               int* replicated);
/* Copies this rank's box of an array leaf into `buffer` of `size` bytes as `dtype` (a
 * different dtype is a value-checked cast: no silent truncation). CAIRN_ERR_INVALID_ARGUMENT
 * when `size` is not the box's element count times the dtype size. */
CAIRN_C_API cairn_status cairn_tree_read_array(const cairn_tree* tree, const char* path, int dtype,
                                               void* buffer, size_t size);
/* Reads a scalar leaf as `dtype` into `value` (value-checked cast). */
CAIRN_C_API cairn_status cairn_tree_get_scalar(const cairn_tree* tree, const char* path, int dtype,
                                               void* value);
/* A string leaf's value in *value (free with cairn_free). */
CAIRN_C_API cairn_status cairn_tree_get_string(const cairn_tree* tree, const char* path,
                                               char** value);
/* A JSON leaf as text in *json_text (free with cairn_free). */
CAIRN_C_API cairn_status cairn_tree_get_json(const cairn_tree* tree, const char* path,
                                             char** json_text);

/* ---------------------------------------------------------------- composite items */

/* Named items of a composite checkpoint: array trees and JSON values, each stored in its own
 * sub-directory of the step. Names are path components that do not start with "__". */
typedef struct cairn_items cairn_items;

/* A new empty item set in *out. */
CAIRN_C_API cairn_status cairn_items_create(cairn_items** out);
/* Frees the set (not the trees it refers to). */
CAIRN_C_API void cairn_items_free(cairn_items* items);
/* Adds an array-tree item. The set refers to `tree` (it does not copy it), which must stay
 * alive while the set is used. For a save, the tree's leaves are saved; for a restore it is the
 * target (restored in place, like cairn_manager_restore). NULL `tree` in a restore: the item is
 * restored as saved into a tree the set owns (cairn_items_get_tree). */
CAIRN_C_API cairn_status cairn_items_add_tree(cairn_items* items, const char* name,
                                              cairn_tree* tree);
/* Adds a JSON item from its text (copied). For a restore pass NULL: the restored value is then
 * read with cairn_items_get_json. */
CAIRN_C_API cairn_status cairn_items_add_json(cairn_items* items, const char* name,
                                              const char* json_text);
/* The JSON item `name` as text in *json_text (free with cairn_free). CAIRN_ERR_NOT_FOUND
 * when there is no such item or it holds no value. */
CAIRN_C_API cairn_status cairn_items_get_json(const cairn_items* items, const char* name,
                                              char** json_text);
/* The tree of item `name` in *tree: a new handle (free it with cairn_tree_free) that shares
 * the item's buffers, which live as long as either handle. */
CAIRN_C_API cairn_status cairn_items_get_tree(const cairn_items* items, const char* name,
                                              cairn_tree** tree);

/* ---------------------------------------------------------------- policies */

/* Composable policy objects (cairn/policies.hpp) for cairn_manager_options: a save decision
 * policy (when to save) and a preservation policy (which committed steps to keep). A policy is
 * an immutable value: the constructors below make a new handle, cairn_*_policy_any_of combines
 * handles (it keeps its own references, so the handles given to it may be freed at once), and
 * a manager keeps a reference to the policies of its options. None of these functions is
 * collective. Every constructor fails with CAIRN_ERR_INVALID_ARGUMENT for a NULL `out` or an
 * argument out of range (named in cairn_last_error()). */
typedef struct cairn_save_policy cairn_save_policy;
typedef struct cairn_preservation_policy cairn_preservation_policy; /* which steps to keep */

/* Saves every step that is a multiple of `interval` (> 0). */
CAIRN_C_API cairn_status cairn_save_policy_fixed_interval(int64_t interval,
                                                          cairn_save_policy** out);
/* Saves exactly the `count` steps at `steps` (NULL with count 0: none). */
CAIRN_C_API cairn_status cairn_save_policy_specific_steps(const int64_t* steps, size_t count,
                                                          cairn_save_policy** out);
/* Saves whenever no save is in flight and the last save is at least `minimum_interval_s`
 * seconds old (0: no minimum; must not be negative). The primary rank's clock decides. */
CAIRN_C_API cairn_status cairn_save_policy_continuous(int64_t minimum_interval_s,
                                                      cairn_save_policy** out);
/* Saves when a preemption notice has been reached. */
CAIRN_C_API cairn_status cairn_save_policy_preemption(cairn_save_policy** out);
/* Saves when the root holds no checkpoint yet, whatever the step. */
CAIRN_C_API cairn_status cairn_save_policy_initial(cairn_save_policy** out);
/* Decides whether to save `step` (cairn_manager_options.should_save_fn): nonzero for yes. The
 * manager calls it on its primary rank only and gives every rank that answer. */
typedef int (*cairn_should_save_fn)(int64_t step, void* user_data);
/* Saves when fn(step, user_data) returns nonzero (fn must not be NULL). */
CAIRN_C_API cairn_status cairn_save_policy_fn(cairn_should_save_fn fn, void* user_data,
                                              cairn_save_policy** out);
/* Saves when any of the `count` policies at `policies` says so, asked in order (count 0:
 * never saves). CAIRN_ERR_INVALID_ARGUMENT for a NULL list with count > 0 or a NULL element. */
CAIRN_C_API cairn_status cairn_save_policy_any_of(const cairn_save_policy* const* policies,
                                                  size_t count, cairn_save_policy** out);
/* A short description such as "AnyOf(FixedInterval(10), PreemptionCheckpointing)" in *text,
 * to be freed with cairn_free(). */
CAIRN_C_API cairn_status cairn_save_policy_describe(const cairn_save_policy* policy, char** text);
/* Frees the handle (NULL is ignored); managers and combinations using it keep their own
 * reference. */
CAIRN_C_API void cairn_save_policy_free(cairn_save_policy* policy);

/* Keeps every checkpoint. */
CAIRN_C_API cairn_status cairn_preservation_policy_preserve_all(cairn_preservation_policy** out);
/* Keeps the `n` (>= 0) checkpoints with the highest steps. */
CAIRN_C_API cairn_status cairn_preservation_policy_latest_n(int64_t n,
                                                            cairn_preservation_policy** out);
/* Keeps the checkpoints whose step is a multiple of `interval` (> 0). */
CAIRN_C_API cairn_status cairn_preservation_policy_every_n_steps(int64_t interval,
                                                                 cairn_preservation_policy** out);
/* Keeps one checkpoint per window of `interval_s` (> 0) seconds (see
 * cairn::preservation_policy::EveryNSeconds). */
CAIRN_C_API cairn_status cairn_preservation_policy_every_n_seconds(int64_t interval_s,
                                                                   cairn_preservation_policy** out);
/* Keeps the `n` (>= 0) checkpoints with the best metric (the manager's best_metric; best_mode
 * CAIRN_BEST_MAX or CAIRN_BEST_MIN), and, when keep_without_metrics is nonzero, those saved
 * without it. */
CAIRN_C_API cairn_status cairn_preservation_policy_best_n(int64_t n, int best_mode,
                                                          int keep_without_metrics,
                                                          cairn_preservation_policy** out);
/* Keeps the checkpoints whose step is one of the `count` steps at `steps`. */
CAIRN_C_API cairn_status cairn_preservation_policy_custom_steps(const int64_t* steps, size_t count,
                                                                cairn_preservation_policy** out);
/* Keeps what any of the `count` policies keeps (count 0: keeps nothing but the newest step,
 * which a manager always keeps). CAIRN_ERR_INVALID_ARGUMENT for a NULL list with count > 0 or
 * a NULL element. */
CAIRN_C_API cairn_status
cairn_preservation_policy_any_of(const cairn_preservation_policy* const* policies, size_t count,
                                 cairn_preservation_policy** out);
/* A short description such as "AnyOf(LatestN(3), EveryNSteps(100))" in *text (free with
 * cairn_free()). */
CAIRN_C_API cairn_status cairn_preservation_policy_describe(const cairn_preservation_policy* policy,
                                                            char** text);
/* Frees the handle (NULL is ignored). */
CAIRN_C_API void cairn_preservation_policy_free(cairn_preservation_policy* policy);

/* ---------------------------------------------------------------- options */

/* Storage formats of array leaves. */
enum { CAIRN_FORMAT_POSIX = 0, CAIRN_FORMAT_HDF5 = 1 };
/* Which metric is best (cairn_manager_options.best_mode). */
enum { CAIRN_BEST_MAX = 0, CAIRN_BEST_MIN = 1 };
/* cairn_manager_options.max_to_keep: keep every checkpoint (Orbax's None). */
enum { CAIRN_KEEP_ALL = -1 };
/* How step directories are named (cairn_manager_options.step_name_format). */
enum {
  CAIRN_STEP_NAME_STANDARD = 0, /* Orbax's: <prefix>_<step>, or <step> without prefix */
  CAIRN_STEP_NAME_JOINED = 1    /* <prefix><step>, no separator (CLU's ckpt-<n>) */
};

/* Options of a manager (cairn::CheckpointManagerOptions). Defaults in brackets. */
typedef struct cairn_manager_options {
  size_t struct_size; /* sizeof(cairn_manager_options) as the caller knows it */
  /* when to save */
  int64_t save_interval_steps;         /* [1] save every this many steps */
  const int64_t* save_on_steps;        /* [NULL] also save these steps ... */
  size_t save_on_steps_count;          /* [0] ... (how many) */
  cairn_should_save_fn should_save_fn; /* [NULL] replaces the interval when set */
  void* should_save_user_data;         /* [NULL] passed to should_save_fn */
  /* what to keep (the newest committed step is always kept) */
  int max_to_keep;                      /* [CAIRN_KEEP_ALL] keep at most this many; 0 keeps
                                           none but the newest, which is always kept */
  int64_t keep_period;                  /* [0] also keep multiples of this; 0: none */
  int64_t keep_time_interval_s;         /* [0] also keep one per this many seconds; 0: none */
  const char* best_metric;              /* [NULL] rank steps by this number in their metrics;
                                           a step whose metrics lack it (or hold no number
                                           there) counts as saved without metrics */
  int best_mode;                        /* [CAIRN_BEST_MAX] */
  int keep_checkpoints_without_metrics; /* [1] with best_metric: keep steps without it */
  /* layout and behaviour */
  const char* step_prefix;            /* [""] step directories are <prefix>_<step> (see
                                         step_name_format); a root whose cairn-root.json has
                                         this prefix and no step_name_format: <prefix><step> */
  int step_format_fixed_length;       /* [0] zero-pad step numbers to this many digits; 0: none */
  int create;                         /* [1] create the root when missing */
  int cleanup_tmp_directories;        /* [0] remove leftovers of unfinished saves at start */
  int read_only;                      /* [0] never write (saves return *saved = 0) */
  const char* todelete_subdir;        /* [NULL] move deleted steps there instead of removing */
  int enable_background_delete;       /* [0] */
  int single_host_load_and_broadcast; /* [0] */
  int primary_host;                   /* [0] rank that does single-writer work */
  const int* active_processes;        /* [NULL] ranks taking part (must include the primary) */
  size_t active_processes_count;      /* [0] */
  double barrier_timeout_s;           /* [600] deadline of every collective step */
  int enable_async;                   /* [1] save in the background */
  size_t async_staging_bytes;         /* [1 GiB] staging budget of async saves */
  int async_zero_copy;                /* [0] keep references: do not touch buffers until finished */
  /* preemption (reached_preemption, and a save at the preemption step) */
  int enable_preemption;             /* [0] */
  const int* preemption_signals;     /* [NULL: SIGTERM and SIGUSR1] */
  size_t preemption_signals_count;   /* [0]; with a non-NULL list, 0 watches no signal */
  double preemption_deadline;        /* [0] Unix time the job must end by; 0: unknown */
  int preemption_use_slurm_end_time; /* [1] read SLURM_JOB_END_TIME */
  double preemption_margin_s;        /* [300] preemption is reached this long before the end */
  /* composite mode: the item names a save may use */
  const char* const* item_names; /* [NULL] */
  size_t item_names_count;       /* [0] */
  /* policy objects (see "policies" above); the manager keeps a reference, so the handles may
     be freed after cairn_manager_create */
  const cairn_save_policy* save_decision_policy;        /* [NULL] replaces save_interval_steps,
                                                           save_on_steps and should_save_fn (a
                                                           preemption save is always added) */
  const cairn_preservation_policy* preservation_policy; /* [NULL] replaces max_to_keep,
                                                           keep_period, keep_time_interval_s
                                                           and keep_checkpoints_without_metrics
                                                           (best_metric still ranks steps) */
  int allow_non_empty_root; /* [0] a writing manager may open a non-empty directory that is not a
                               checkpoint root (no cairn-root.json, no step directory) */
  /* files of a step (cairn::CheckpointerOptions) */
  int file_mode;              /* [-1] permission bits of every file and directory of a committed
                                 step, e.g. 0640 (directories also get x where r is granted);
                                 -1: what the umask leaves of 0666 / 0777 */
  const char* file_group;     /* [NULL] group of those files, by name or number */
  double write_timeout_s;     /* [0] a rank's local writes of a save may take this long before the
                                 save fails on every rank naming the stuck rank; 0: half of
                                 barrier_timeout_s */
  int step_name_format;       /* [CAIRN_STEP_NAME_STANDARD] how step_prefix joins the step */
  int save_root_metadata;     /* [1] write cairn-root.json when the root has none */
  int lightweight_initialize; /* [0] list the step numbers only at open; read the step
                                 metadata when first needed (save decisions, retention,
                                 metrics) */
} cairn_manager_options;

/* Fills *options with the defaults for a caller that knows `struct_size` bytes of it. */
CAIRN_C_API cairn_status cairn_manager_options_init(cairn_manager_options* options,
                                                    size_t struct_size);

/* Options of one save (cairn::ManagerSaveOptions and the array trees' TreeSaveOptions). */
typedef struct cairn_save_options {
  size_t struct_size;               /* sizeof(cairn_save_options) as the caller knows it */
  const char* metrics_json;         /* [NULL] JSON object stored with the step (best_metric) */
  const char* custom_metadata_json; /* [NULL] any JSON value stored in the step metadata */
  int force;                        /* [0] save even when the policy says no (never replaces
                                       a step: an existing one is an error) */
  int format;                       /* [CAIRN_FORMAT_POSIX] format of array leaves */
  int allow_sparse;                 /* [0] boxes may leave holes (read back as zeros) */
  int fsync;                        /* [1] fsync every file written */
} cairn_save_options;

/* Fills *options with the defaults for a caller that knows `struct_size` bytes of it. */
CAIRN_C_API cairn_status cairn_save_options_init(cairn_save_options* options, size_t struct_size);

/* Options of a restore (cairn::TreeRestoreOptions and AsSavedOptions). */
typedef struct cairn_restore_options {
  size_t struct_size;                 /* sizeof(cairn_restore_options) as the caller knows it */
  int verify_checksums;               /* [1] verify the checksum of every shard read */
  int allow_cast;                     /* [0] target dtypes may differ (value-checked casts) */
  const char* const* optional_leaves; /* [NULL] target leaves that may be missing on disk */
  size_t optional_leaves_count;       /* [0] */
  int whole_arrays;                   /* [0] as saved: every rank gets every array whole */
  const char* const* select;          /* [NULL] as saved: only these leaves or groups */
  size_t select_count;                /* [0] */
} cairn_restore_options;

/* Fills *options with the defaults for a caller that knows `struct_size` bytes of it. */
CAIRN_C_API cairn_status cairn_restore_options_init(cairn_restore_options* options,
                                                    size_t struct_size);

/* ---------------------------------------------------------------- checkpoint manager */

/* A series of checkpoints under one root directory (cairn::CheckpointManager). Every
 * function below is collective over the manager's communicator unless it says otherwise. */
typedef struct cairn_manager cairn_manager;

/* The newest step, for the `step` argument of the restore functions. */
#define CAIRN_STEP_LATEST INT64_MIN

/* Opens (creates and locks, unless read-only) the root `root` over `comm`. Collective.
 * CAIRN_ERR_NOT_FOUND when the root is missing and options->create is 0;
 * CAIRN_ERR_INVALID_ARGUMENT for bad options, a root locked by another job, a root that is a
 * checkpoint, an item of one or inside either, or (unless allow_non_empty_root) a non-empty
 * directory that is not a checkpoint root. */
CAIRN_C_API cairn_status cairn_manager_create(const cairn_comm* comm, const char* root,
                                              const cairn_manager_options* options,
                                              cairn_manager** out);
/* Closes (see cairn_manager_close) and frees the manager. Collective unless it was closed. */
CAIRN_C_API cairn_status cairn_manager_free(cairn_manager* manager);

/* Saves `tree` as `step` when the save policy (or force, or preemption) says so; *saved (when
 * not NULL) says whether a save started: 0 for a step that already exists (without force) and
 * on a read-only manager. Async by default: the tree's buffers may be modified once this
 * returns (unless async_zero_copy). Collective. CAIRN_ERR_INVALID_ARGUMENT for a forced save
 * of a step that exists (delete it first to replace it). */
CAIRN_C_API cairn_status cairn_manager_save(cairn_manager* manager, int64_t step,
                                            const cairn_tree* tree,
                                            const cairn_save_options* options, int* saved);
/* As cairn_manager_save for a composite step of named items. Collective. */
CAIRN_C_API cairn_status cairn_manager_save_items(cairn_manager* manager, int64_t step,
                                                  const cairn_items* items,
                                                  const cairn_save_options* options, int* saved);

/* Restores `step` (or CAIRN_STEP_LATEST) into `target`: every array leaf of the target is
 * read into its buffer (the target's box and dtype: any number of ranks, any decomposition),
 * scalar, string and JSON leaves of the target get the saved values. Leaves not in the target
 * are not read (partial restore). Collective. CAIRN_ERR_NOT_FOUND for a missing step or leaf
 * (unless listed in optional_leaves). */
CAIRN_C_API cairn_status cairn_manager_restore(cairn_manager* manager, int64_t step,
                                               cairn_tree* target,
                                               const cairn_restore_options* options);
/* Restores the newest committed step that restores without error into `target`, as
 * cairn_manager_restore does, trying the steps newest first: the restart of a run whose newest
 * checkpoint is damaged. A step fails when any rank finds a damaged, truncated or missing file
 * (CAIRN_ERR_FORMAT or CAIRN_ERR_NOT_FOUND); once an older step restores, each newer step that
 * failed is moved aside as `<name>.damaged-<n>` in the root (logged, shown by `cairn ls`, never
 * deleted by cairn). *step gets the step restored with *found = 1, or *found = 0 when the root
 * has no committed step. Collective. When no step restores, nothing is moved aside and the
 * newest step's error is returned; CAIRN_ERR_INVALID_ARGUMENT for a target that does not fit. */
CAIRN_C_API cairn_status cairn_manager_restore_latest_intact(cairn_manager* manager,
                                                             cairn_tree* target,
                                                             const cairn_restore_options* options,
                                                             int64_t* step, int* found);
/* Restores `step` as it was saved into a new tree in *out that owns its buffers: each rank
 * gets the boxes the rank of its number wrote, or every array whole (whole_arrays); only the
 * `select` leaves when given. Collective. */
CAIRN_C_API cairn_status cairn_manager_restore_as_saved(cairn_manager* manager, int64_t step,
                                                        const cairn_restore_options* options,
                                                        cairn_tree** out);
/* Restores the items of a composite step named in `items` (only those: partial restore): tree
 * items as cairn_manager_restore (NULL tree: as saved), JSON items are replaced by the saved
 * value. Collective. */
CAIRN_C_API cairn_status cairn_manager_restore_items(cairn_manager* manager, int64_t step,
                                                     cairn_items* items,
                                                     const cairn_restore_options* options);

/* The newest committed step in *step with *found = 1, or *found = 0. Collective. */
CAIRN_C_API cairn_status cairn_manager_latest_step(cairn_manager* manager, int64_t* step,
                                                   int* found);
/* The best committed step by best_metric; without best_metric the newest; *found = 0 when
 * there is no step, or no step has best_metric. Collective. */
CAIRN_C_API cairn_status cairn_manager_best_step(cairn_manager* manager, int64_t* step, int* found);
/* The committed steps, ascending, in *steps (free with cairn_free; NULL when *count is 0).
 * `reload` nonzero re-lists the root first. Collective. */
CAIRN_C_API cairn_status cairn_manager_all_steps(cairn_manager* manager, int reload,
                                                 int64_t** steps, size_t* count);
/* Re-reads the steps and their metadata from the root. Collective. */
CAIRN_C_API cairn_status cairn_manager_reload(cairn_manager* manager);
/* Whether a save of `step` would happen (*result 0 or 1). Collective. */
CAIRN_C_API cairn_status cairn_manager_should_save(cairn_manager* manager, int64_t step,
                                                   int* result);
/* Whether any rank was signalled or the end of the job is near, the same on every rank
 * (*result 0 or 1; always 0 without enable_preemption). Collective. */
CAIRN_C_API cairn_status cairn_manager_reached_preemption(cairn_manager* manager, int64_t step,
                                                          int* result);
/* Blocks until the save in flight is committed and retention ran; fails on every rank when
 * that save failed anywhere. Collective. */
CAIRN_C_API cairn_status cairn_manager_wait_until_finished(cairn_manager* manager);
/* Fails on every rank when a background save failed. Collective. */
CAIRN_C_API cairn_status cairn_manager_check_for_errors(cairn_manager* manager);
/* Whether a save is in flight on this rank. Not collective. */
CAIRN_C_API cairn_status cairn_manager_is_saving_in_progress(const cairn_manager* manager,
                                                             int* result);
/* Deletes a committed step (or moves it to todelete_subdir). Collective.
 * CAIRN_ERR_NOT_FOUND for a step that is not committed. */
CAIRN_C_API cairn_status cairn_manager_delete_step(cairn_manager* manager, int64_t step);
/* The metrics saved with `step` as JSON text ("{}" when none). Collective. */
CAIRN_C_API cairn_status cairn_manager_metrics(cairn_manager* manager, int64_t step,
                                               char** json_text);
/* The custom metadata saved with `step` ("null" when none). Collective. */
CAIRN_C_API cairn_status cairn_manager_custom_metadata(cairn_manager* manager, int64_t step,
                                                       char** json_text);
/* The whole step metadata (cairn-step.json) of `step` as text. Collective. */
CAIRN_C_API cairn_status cairn_manager_step_metadata(cairn_manager* manager, int64_t step,
                                                     char** json_text);
/* The root metadata (cairn-root.json) as text. Collective. */
CAIRN_C_API cairn_status cairn_manager_root_metadata(cairn_manager* manager, char** json_text);
/* The handler's description of the items of `step` (structure, shapes, sizes). Collective. */
CAIRN_C_API cairn_status cairn_manager_item_metadata(cairn_manager* manager, int64_t step,
                                                     char** json_text);
/* The directory of `step` in *path (free with cairn_free). Not collective. */
CAIRN_C_API cairn_status cairn_manager_step_path(const cairn_manager* manager, int64_t step,
                                                 char** path);
/* Finishes the save in flight and background deletes and releases the root lock; fails on
 * every rank when the save failed. Idempotent. Collective. */
CAIRN_C_API cairn_status cairn_manager_close(cairn_manager* manager);

/* ---------------------------------------------------------------- multihost checkpoints */

/* Per-process checkpoints in `<base>-<rank>` with a collective restart from the newest step
 * every process has (cairn::MultihostCheckpoint). Functions are collective over its comm. */
typedef struct cairn_multihost cairn_multihost;

/* Options of a multihost checkpoint. */
typedef struct cairn_multihost_options {
  size_t struct_size;      /* sizeof(cairn_multihost_options) as the caller knows it */
  int max_to_keep;         /* [5] checkpoints kept per process; at least 2 (CLU's default) */
  const char* step_prefix; /* ["ckpt-"] steps are <prefix><step> (CLU's ckpt-<n>) */
} cairn_multihost_options;

/* Fills *options with the defaults for a caller that knows `struct_size` bytes of it. */
CAIRN_C_API cairn_status cairn_multihost_options_init(cairn_multihost_options* options,
                                                      size_t struct_size);
/* Uses `<base>-<rank>` for this process; trailing '/' of `base` are dropped first (CLU).
 * Collective over `comm`. */
CAIRN_C_API cairn_status cairn_multihost_create(const cairn_comm* comm, const char* base,
                                                const cairn_multihost_options* options,
                                                cairn_multihost** out);
/* Frees the handle. Not collective. */
CAIRN_C_API void cairn_multihost_free(cairn_multihost* multihost);
/* Restores the newest step every process has into `state` (a target tree) and stores it in
 * *step; when there is none, saves `state` as `initial_step` and stores that. Collective. */
CAIRN_C_API cairn_status cairn_multihost_restore_or_initialize(cairn_multihost* multihost,
                                                               cairn_tree* state,
                                                               int64_t initial_step, int64_t* step);
/* Saves this process's `state` as `step` (synchronously). Collective. */
CAIRN_C_API cairn_status cairn_multihost_save(cairn_multihost* multihost, int64_t step,
                                              const cairn_tree* state);
/* The newest step every process has, or *found = 0. Collective. */
CAIRN_C_API cairn_status cairn_multihost_latest_common_step(cairn_multihost* multihost,
                                                            int64_t* step, int* found);

#ifdef __cplusplus
}
#endif

#endif /* CAIRN_CAIRN_H */
