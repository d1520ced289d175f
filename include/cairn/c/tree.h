/* cairn C ABI — array trees: leaves, their shards and their values. Part of <cairn/cairn.h>, which
 * includes every part and states the conventions of the ABI (status codes, option structs,
 * collective calls). */
#ifndef CAIRN_C_TREE_H
#define CAIRN_C_TREE_H

#include <cairn/c/common.h>

#ifdef __cplusplus
extern "C" {
#endif

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

/* Kinds of an empty node (cairn::EmptyNode): a nested structure with nothing in it. */
enum {
  CAIRN_EMPTY_GROUP = 0, /* a group without leaves (an empty dict) */
  CAIRN_EMPTY_LIST = 1   /* an empty list */
};
/* Adds an empty node of `kind` at `path`: a save keeps it (in cairn-tree.json) and a restore
 * as saved gives it back (cairn_tree_empty_count, cairn_tree_empty_node). Not collective.
 * CAIRN_ERR_INVALID_ARGUMENT for a bad path or kind, a path that is a leaf or holds leaves, or
 * a duplicate. */
CAIRN_C_API cairn_status cairn_tree_add_empty(cairn_tree* tree, const char* path, int kind);
/* Number of empty nodes in *count. Not collective. */
CAIRN_C_API cairn_status cairn_tree_empty_count(const cairn_tree* tree, size_t* count);
/* The path (in *path, free with cairn_free) and kind (*kind, CAIRN_EMPTY_*; may be NULL) of
 * empty node `index`, in sorted path order. Not collective. CAIRN_ERR_NOT_FOUND when index >=
 * the count. */
CAIRN_C_API cairn_status cairn_tree_empty_node(const cairn_tree* tree, size_t index, char** path,
                                               int* kind);

#ifdef __cplusplus
}
#endif

#endif /* CAIRN_C_TREE_H */
