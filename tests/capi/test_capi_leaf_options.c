/* Per-leaf save arguments, compression and the restore transforms through the C ABI, one
 * scenario per ctest case (argv[1]): a float64 leaf stored as float32 with its own checksum
 * chunk size (both formats), a rename on restore, a resized target, a derived target leaf,
 * a leaf's own format, the errors of invalid arguments (naming the leaf), and zstd and zfp
 * round trips. The values are chosen so that a cast
 * that did not happen shows (0.1 is not a float32). C99, cairn.h and MPI only. */
#include <cairn/cairn.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi_test.h"

#define BLOCK 10 /* elements of a leaf per rank */

/* Element i of the test field: not representable in float32, so that a cast is visible. */
static double field_value(int64_t i) { return (double)i + 0.1; }

/* A tree with the float64 leaf `path` of BLOCK elements per rank, rank `owner` holding block
 * `block` in `data` (filled with field_value when `fill`, with -1 otherwise), and an int32 leaf
 * "counts" (one element per rank) viewing *count. */
static cairn_tree* make_tree(const char* path, double* data, int block, int size, int fill,
                             int32_t* count) {
  cairn_tree* tree = NULL;
  const int64_t global = (int64_t)BLOCK * size;
  const int64_t offset = (int64_t)BLOCK * block;
  const int64_t local = BLOCK;
  const int64_t count_global = size;
  const int64_t count_offset = block;
  const int64_t one = 1;
  int i;
  for (i = 0; i < BLOCK; ++i) data[i] = fill ? field_value(offset + i) : -1.0;
  CHECK_OK(cairn_tree_create(&tree));
  CHECK_OK(cairn_tree_add_array(tree, path, CAIRN_FLOAT64, 1, &global, &offset, &local, data, 0));
  CHECK_OK(cairn_tree_add_array(tree, "counts", CAIRN_INT32, 1, &count_global, &count_offset, &one,
                                count, 0));
  return tree;
}

/* Saves a tree with leaf "u" as `dir` with `s`, returning the status of the save. */
static cairn_status save_u(cairn_checkpointer* c, const char* dir, const cairn_save_options* s,
                           int rank, int size) {
  double u[BLOCK];
  int32_t count = rank;
  cairn_tree* tree = make_tree("u", u, rank, size, 1, &count);
  const cairn_status status = cairn_checkpointer_save(c, dir, tree, s);
  cairn_tree_free(tree);
  return status;
}

/* Whether the file `path` (read on this rank) contains `text`. */
static int file_contains(const char* path, const char* text) {
  static char buffer[1 << 16];
  size_t n;
  FILE* f = fopen(path, "rb");
  if (f == NULL) return 0;
  n = fread(buffer, 1, sizeof buffer - 1, f);
  fclose(f);
  buffer[n] = '\0';
  return strstr(buffer, text) != NULL;
}

/* "u" saved as float32 with 36-byte checksum chunks (nine elements); restored into float64
 * with another decomposition, every value is the float32 rounding of the saved one. */
static void cast_and_chunk(const cairn_comm* comm, int rank, int size, int format) {
  cairn_checkpointer* c = NULL;
  cairn_save_options s;
  cairn_leaf_save_args args;
  cairn_restore_options r;
  cairn_tree* target = NULL;
  double u[BLOCK];
  int32_t count = -1;
  char* text = NULL;
  const int block = size - 1 - rank; /* another rank's block */
  const char* dir = capi_test_path(format == CAIRN_FORMAT_HDF5 ? "cast_hdf5" : "cast_posix");
  int i;
  CHECK_OK(cairn_checkpointer_create(comm, 0, &c));
  CHECK_OK(cairn_leaf_save_args_init(&args, sizeof args));
  args.path = "u";
  args.dtype = CAIRN_FLOAT32;
  args.chunk_bytes = 36;
  CHECK_OK(cairn_save_options_init(&s, sizeof s));
  s.format = format;
  s.save_args = &args;
  s.save_args_count = 1;
  CHECK_OK(save_u(c, dir, &s, rank, size));
  CHECK_OK(cairn_checkpointer_metadata(c, dir, &text));
  CHECK(strstr(text, "\"float32\"") != NULL);
  cairn_free(text);
  if (format == CAIRN_FORMAT_POSIX) {
    char index[4096];
    snprintf(index, sizeof index, "%s/cairn-tree.json", dir);
    CHECK(file_contains(index, "\"chunk_bytes\":36"));
    CHECK(file_contains(index, "\"chunk_bytes\":1048576")); /* "counts": the default */
  }
  target = make_tree("u", u, block, size, 0, &count);
  /* a float32 leaf does not restore into float64 without allow_cast */
  CHECK_STATUS(cairn_checkpointer_restore(c, dir, target, NULL), CAIRN_ERR_INVALID_ARGUMENT,
               "float32");
  CHECK_OK(cairn_restore_options_init(&r, sizeof r));
  r.allow_cast = 1;
  CHECK_OK(cairn_checkpointer_restore(c, dir, target, &r));
  for (i = 0; i < BLOCK; ++i) {
    const double saved = field_value((int64_t)BLOCK * block + i);
    CHECK(u[i] == (double)(float)saved && u[i] != saved);
  }
  CHECK(count == block);
  cairn_tree_free(target);
  cairn_checkpointer_free(c);
}

static void cast_posix(const cairn_comm* comm, int rank, int size) {
  cast_and_chunk(comm, rank, size, CAIRN_FORMAT_POSIX);
}

static void cast_hdf5(const cairn_comm* comm, int rank, int size) {
  cast_and_chunk(comm, rank, size, CAIRN_FORMAT_HDF5);
}

/* A checkpoint of an older layout ("old/u") restored into "blocks/u" by a rename rule with a
 * group; without the rule and with default_to_original = 0 the target leaf is not found. */
static void rename_scenario(const cairn_comm* comm, int rank, int size) {
  cairn_checkpointer* c = NULL;
  cairn_restore_options r;
  cairn_leaf_rename rules[2];
  cairn_tree* tree = NULL;
  double u[BLOCK];
  int32_t count = rank;
  const char* dir = capi_test_path("renamed");
  int i;
  CHECK_OK(cairn_checkpointer_create(comm, 0, &c));
  tree = make_tree("old/u", u, rank, size, 1, &count);
  CHECK_OK(cairn_checkpointer_save(c, dir, tree, NULL));
  cairn_tree_free(tree);

  tree = make_tree("blocks/u", u, size - 1 - rank, size, 0, &count);
  count = -1;
  CHECK_STATUS(cairn_checkpointer_restore(c, dir, tree, NULL), CAIRN_ERR_NOT_FOUND, "blocks/u");
  rules[0].target = "nothing/(.*)"; /* matches no leaf: the next rule applies */
  rules[0].saved = "nowhere/$1";
  rules[1].target = "blocks/(.*)";
  rules[1].saved = "old/$1";
  CHECK_OK(cairn_restore_options_init(&r, sizeof r));
  CHECK(r.default_to_original == 1);
  r.renames = rules;
  r.renames_count = 2;
  CHECK_OK(cairn_checkpointer_restore(c, dir, tree, &r));
  for (i = 0; i < BLOCK; ++i) CHECK(u[i] == field_value((int64_t)BLOCK * (size - 1 - rank) + i));
  CHECK(count == size - 1 - rank); /* "counts" matched no rule: read from its own path */

  /* without default_to_original, "counts" (no rule) is not found */
  r.default_to_original = 0;
  CHECK_STATUS(cairn_checkpointer_restore(c, dir, tree, &r), CAIRN_ERR_NOT_FOUND, "counts");
  r.default_to_original = 1;
  rules[1].target = "blocks/(";
  CHECK_STATUS(cairn_checkpointer_restore(c, dir, tree, &r), CAIRN_ERR_INVALID_ARGUMENT,
               "blocks/(");
  rules[1].target = NULL;
  CHECK_STATUS(cairn_checkpointer_restore(c, dir, tree, &r), CAIRN_ERR_INVALID_ARGUMENT,
               "renames[1].target");
  cairn_tree_free(tree);
  cairn_checkpointer_free(c);
}

/* A target three elements longer than the saved "u", whole on every rank: the saved values,
 * then the fill value. */
static void resize_scenario(const cairn_comm* comm, int rank, int size) {
  cairn_checkpointer* c = NULL;
  cairn_restore_options r;
  cairn_leaf_resize resize;
  cairn_tree* tree = NULL;
  const int64_t n = (int64_t)BLOCK * size + 3;
  const double fill = -7.0;
  double* whole = (double*)malloc((size_t)n * sizeof(double));
  int64_t i;
  const char* dir = capi_test_path("resized");
  CHECK(whole != NULL);
  CHECK_OK(cairn_checkpointer_create(comm, 0, &c));
  CHECK_OK(save_u(c, dir, NULL, rank, size));
  CHECK_OK(cairn_tree_create(&tree));
  CHECK_OK(cairn_tree_add_array(tree, "u", CAIRN_FLOAT64, 1, &n, NULL, NULL, whole,
                                CAIRN_ARRAY_REPLICATED));
  CHECK_STATUS(cairn_checkpointer_restore(c, dir, tree, NULL), CAIRN_ERR_INVALID_ARGUMENT, "u");
  CHECK_OK(cairn_restore_options_init(&r, sizeof r));
  resize.path = "u";
  resize.fill_dtype = CAIRN_FLOAT64;
  resize.fill = &fill;
  r.resize_leaves = &resize;
  r.resize_leaves_count = 1;
  r.restore_concurrent_bytes = 8192;
  r.load_and_broadcast = 1;
  CHECK_OK(cairn_checkpointer_restore(c, dir, tree, &r));
  for (i = 0; i < n; ++i) CHECK(whole[i] == (i < n - 3 ? field_value(i) : fill));
  cairn_tree_free(tree);
  cairn_checkpointer_free(c);
  free(whole);
}

/* Invalid per-leaf arguments fail on every rank with CAIRN_ERR_INVALID_ARGUMENT naming the
 * leaf, and nothing is committed. */
static void invalid_scenario(const cairn_comm* comm, int rank, int size) {
  cairn_checkpointer* c = NULL;
  cairn_save_options s;
  cairn_leaf_save_args args[2];
  const int64_t chunk[2] = {2, 2};
  const char* dir = capi_test_path("invalid");
  CHECK_OK(cairn_checkpointer_create(comm, 0, &c));
  CHECK_OK(cairn_leaf_save_args_init(&args[0], sizeof args[0]));
  CHECK_OK(cairn_leaf_save_args_init(&args[1], sizeof args[1]));
  CHECK_OK(cairn_save_options_init(&s, sizeof s));
  s.save_args = args;
  s.save_args_count = 1;

  args[0].path = "missing/leaf";
  CHECK_STATUS(save_u(c, dir, &s, rank, size), CAIRN_ERR_INVALID_ARGUMENT, "missing/leaf");
  args[0].path = "u";
  args[0].dtype = CAIRN_COMPLEX64 + 100;
  CHECK_STATUS(save_u(c, dir, &s, rank, size), CAIRN_ERR_INVALID_ARGUMENT,
               "leaf 'u': unknown dtype");
  args[0].dtype = -1;
  args[0].chunk_shape = chunk;
  args[0].chunk_shape_ndim = 2; /* "u" has one dimension */
  CHECK_STATUS(save_u(c, dir, &s, rank, size), CAIRN_ERR_INVALID_ARGUMENT, "leaf 'u'");
  args[0].chunk_shape_ndim = 1;
  args[0].chunk_shape = NULL;
  CHECK_STATUS(save_u(c, dir, &s, rank, size), CAIRN_ERR_INVALID_ARGUMENT, "leaf 'u'");
  args[0].chunk_shape_ndim = 0;
  args[0].compression.kind = 42;
  CHECK_STATUS(save_u(c, dir, &s, rank, size), CAIRN_ERR_INVALID_ARGUMENT, "leaf 'u'");
  args[0].compression.kind = CAIRN_COMPRESSION_DEFAULT;
  args[1].path = "u";
  s.save_args_count = 2;
  CHECK_STATUS(save_u(c, dir, &s, rank, size), CAIRN_ERR_INVALID_ARGUMENT, "twice");
  s.save_args_count = 1;
  s.save_args = NULL;
  CHECK_STATUS(save_u(c, dir, &s, rank, size), CAIRN_ERR_INVALID_ARGUMENT, "save_args");
  s.save_args = args;
  s.checksum_chunk_bytes = 0;
  CHECK_STATUS(save_u(c, dir, &s, rank, size), CAIRN_ERR_INVALID_ARGUMENT, "checksum_chunk_bytes");
  s.checksum_chunk_bytes = 64;
  s.compression.kind = CAIRN_COMPRESSION_DEFAULT;
  CHECK_STATUS(save_u(c, dir, &s, rank, size), CAIRN_ERR_INVALID_ARGUMENT, "compression");
  CHECK(!capi_test_is_dir(dir));
  cairn_checkpointer_free(c);
}

/* "u" in hdf5 in a posix save through its save_args format, restored exactly; an unknown
 * format and a NULL sparse_leaves list are refused. */
static void leaf_format(const cairn_comm* comm, int rank, int size) {
  cairn_checkpointer* c = NULL;
  cairn_save_options s;
  cairn_leaf_save_args args;
  cairn_tree* target = NULL;
  double u[BLOCK];
  int32_t count = -1;
  const char* dir = capi_test_path("leaf_format");
  char data[4096];
  int i;
  CHECK_OK(cairn_checkpointer_create(comm, 0, &c));
  CHECK_OK(cairn_leaf_save_args_init(&args, sizeof args));
  CHECK(args.format == -1 && args.dtype == -1 && args.chunk_bytes == 0);
  args.path = "u";
  args.format = 7;
  CHECK_OK(cairn_save_options_init(&s, sizeof s));
  CHECK(s.checksum_chunk_bytes == ((size_t)1 << 20) && s.io_buffer_bytes == ((size_t)16 << 20));
  s.save_args = &args;
  s.save_args_count = 1;
  CHECK_STATUS(save_u(c, dir, &s, rank, size), CAIRN_ERR_INVALID_ARGUMENT, "leaf 'u'");
  args.format = CAIRN_FORMAT_HDF5;
  s.sparse_leaves_count = 1;
  CHECK_STATUS(save_u(c, dir, &s, rank, size), CAIRN_ERR_INVALID_ARGUMENT, "sparse_leaves");
  s.sparse_leaves_count = 0;
  s.io_buffer_bytes = 4096;
  CHECK_OK(save_u(c, dir, &s, rank, size));
  snprintf(data, sizeof data, "%s/data.h5", dir);
  CHECK(capi_test_is_file(data));
  target = make_tree("u", u, size - 1 - rank, size, 0, &count);
  CHECK_OK(cairn_checkpointer_restore(c, dir, target, NULL));
  for (i = 0; i < BLOCK; ++i) CHECK(u[i] == field_value((int64_t)BLOCK * (size - 1 - rank) + i));
  CHECK(count == size - 1 - rank);
  cairn_tree_free(target);
  cairn_checkpointer_free(c);
}

/* The fill function of the derived leaf "sum": vx + vy element by element, after checking
 * that every description is the same box of float64 values; *(int*)user_data is returned. */
static int fill_sum(const cairn_array_desc* sources, size_t count, const cairn_array_desc* target,
                    void* user_data) {
  const double* vx = (const double*)sources[0].data;
  const double* vy = (const double*)sources[1].data;
  double* out = (double*)target->data;
  int64_t i;
  CHECK(count == 2 && target->ndim == 1 && target->dtype == CAIRN_FLOAT64);
  for (i = 0; i < 2; ++i) {
    CHECK(sources[i].dtype == CAIRN_FLOAT64 && sources[i].ndim == 1 && sources[i].strides == NULL);
    CHECK(sources[i].offset[0] == target->offset[0]);
    CHECK(sources[i].local_dims[0] == target->local_dims[0]);
    CHECK(sources[i].global_dims[0] == target->global_dims[0]);
  }
  for (i = 0; i < target->local_dims[0]; ++i) out[i] = vx[i] + vy[i];
  return *(const int*)user_data;
}

/* A target leaf "sum" computed from the saved leaves "vx" and "vy", in another decomposition;
 * a fill function that fails, and a source missing on disk, fail naming the leaves. */
static void derived_scenario(const cairn_comm* comm, int rank, int size) {
  cairn_checkpointer* c = NULL;
  cairn_restore_options r;
  cairn_derived_leaf rule;
  const char* sources[2] = {"vx", "vy"};
  cairn_tree* tree = NULL;
  double vx[BLOCK];
  double vy[BLOCK];
  double sum[BLOCK];
  int32_t count = rank;
  int result = 0;
  const int block = size - 1 - rank;
  const int64_t global = (int64_t)BLOCK * size;
  const int64_t local = BLOCK;
  int64_t offset = (int64_t)BLOCK * rank;
  const char* dir = capi_test_path("derived");
  int i;
  CHECK_OK(cairn_checkpointer_create(comm, 0, &c));
  tree = make_tree("vx", vx, rank, size, 1, &count);
  for (i = 0; i < BLOCK; ++i) vy[i] = 1000.0 * field_value(offset + i);
  CHECK_OK(cairn_tree_add_array(tree, "vy", CAIRN_FLOAT64, 1, &global, &offset, &local, vy, 0));
  CHECK_OK(cairn_checkpointer_save(c, dir, tree, NULL));
  cairn_tree_free(tree);

  tree = make_tree("sum", sum, block, size, 0, &count);
  rule.target = "sum";
  rule.sources = sources;
  rule.source_count = 2;
  rule.fill = fill_sum;
  rule.user_data = &result;
  CHECK_OK(cairn_restore_options_init(&r, sizeof r));
  r.derived_leaves = &rule;
  r.derived_leaves_count = 1;
  CHECK_OK(cairn_checkpointer_restore(c, dir, tree, &r));
  for (i = 0; i < BLOCK; ++i) {
    const double v = field_value((int64_t)BLOCK * block + i);
    CHECK(sum[i] == v + 1000.0 * v);
  }
  result = 3;
  CHECK_STATUS(cairn_checkpointer_restore(c, dir, tree, &r), CAIRN_ERR_INVALID_ARGUMENT,
               "derived leaf 'sum': its fill function returned 3");
  result = 0;
  sources[1] = "vz";
  CHECK_STATUS(cairn_checkpointer_restore(c, dir, tree, &r), CAIRN_ERR_NOT_FOUND, "vz");
  rule.fill = NULL;
  CHECK_STATUS(cairn_checkpointer_restore(c, dir, tree, &r), CAIRN_ERR_INVALID_ARGUMENT, "sum");
  rule.target = NULL;
  CHECK_STATUS(cairn_checkpointer_restore(c, dir, tree, &r), CAIRN_ERR_INVALID_ARGUMENT,
               "derived_leaves[0].target");
  cairn_tree_free(tree);
  cairn_checkpointer_free(c);
}

/* The compression options reach the save: zfp on the int32 leaf "counts" and a zstd level of
 * 25 are refused naming the leaf (CAIRN_ERR_UNSUPPORTED in a build without the library). */
static void compression_invalid(const cairn_comm* comm, int rank, int size) {
  cairn_checkpointer* c = NULL;
  cairn_save_options s;
  cairn_leaf_save_args args;
  const char* dir = capi_test_path("compressed_invalid");
  CHECK_OK(cairn_checkpointer_create(comm, 0, &c));
  CHECK_OK(cairn_leaf_save_args_init(&args, sizeof args));
  CHECK(args.compression.kind == CAIRN_COMPRESSION_DEFAULT);
  args.path = "counts";
  args.compression.kind = CAIRN_COMPRESSION_ZFP;
  args.compression.absolute_error = 1e-3;
  CHECK_OK(cairn_save_options_init(&s, sizeof s));
  CHECK(s.compression.kind == CAIRN_COMPRESSION_NONE);
  s.save_args = &args;
  s.save_args_count = 1;
  CHECK_STATUS(save_u(c, dir, &s, rank, size),
               CAIRN_TEST_ZFP ? CAIRN_ERR_INVALID_ARGUMENT : CAIRN_ERR_UNSUPPORTED,
               "leaf 'counts'");
  s.save_args_count = 0;
  s.compression.kind = CAIRN_COMPRESSION_ZSTD;
  s.compression.level = 25; /* tree-wide: the first array leaf in path order is named */
  CHECK_STATUS(save_u(c, dir, &s, rank, size),
               CAIRN_TEST_ZSTD ? CAIRN_ERR_INVALID_ARGUMENT : CAIRN_ERR_UNSUPPORTED,
               CAIRN_TEST_ZSTD ? "leaf 'counts': zstd level 25" : "leaf 'counts'");
  s.compression.kind = CAIRN_COMPRESSION_ZFP; /* no bound */
  s.compression.level = 0;
  args.path = "u";
  args.compression.kind = CAIRN_COMPRESSION_NONE; /* "u" overrides; "counts" is an int */
  s.save_args_count = 1;
  CHECK_STATUS(save_u(c, dir, &s, rank, size),
               CAIRN_TEST_ZFP ? CAIRN_ERR_INVALID_ARGUMENT : CAIRN_ERR_UNSUPPORTED,
               "leaf 'counts'");
  CHECK(!capi_test_is_dir(dir));
  cairn_checkpointer_free(c);
}

/* A tree saved with zstd (level 3) restores exactly, in both formats. Prints "SKIPPED:" (a
 * skip for ctest) when this build or its formats cannot store zstd. */
static void zstd_round_trip(const cairn_comm* comm, int rank, int size) {
  static const int formats[2] = {CAIRN_FORMAT_POSIX, CAIRN_FORMAT_HDF5};
  cairn_checkpointer* c = NULL;
  cairn_save_options s;
  cairn_tree* target = NULL;
  double u[BLOCK];
  int32_t count = -1;
  int f;
  int i;
  CHECK_OK(cairn_checkpointer_create(comm, 0, &c));
  for (f = 0; f < (CAIRN_TEST_HDF5 ? 2 : 1); ++f) {
    const char* dir = capi_test_path(f == 0 ? "zstd_posix" : "zstd_hdf5");
    cairn_status status;
    CHECK_OK(cairn_save_options_init(&s, sizeof s));
    s.format = formats[f];
    s.compression.kind = CAIRN_COMPRESSION_ZSTD;
    s.compression.level = 3;
    status = save_u(c, dir, &s, rank, size);
    if (status == CAIRN_ERR_UNSUPPORTED && !CAIRN_TEST_ZFP) {
      if (rank == 0) printf("SKIPPED: zstd save unsupported: %s\n", cairn_last_error());
      break;
    }
    CHECK_OK(status);
    target = make_tree("u", u, size - 1 - rank, size, 0, &count);
    CHECK_OK(cairn_checkpointer_restore(c, dir, target, NULL));
    for (i = 0; i < BLOCK; ++i) CHECK(u[i] == field_value((int64_t)BLOCK * (size - 1 - rank) + i));
    CHECK(count == size - 1 - rank);
    cairn_tree_free(target);
  }
  cairn_checkpointer_free(c);
}

/* "u" saved with zfp and an absolute error bound of 1e-3 (its own compression; "counts", an
 * int32 leaf, is not compressed), in both formats (hdf5: H5Z-ZFP's filter): every restored
 * value is within the bound, restored with checksums verified. Prints "SKIPPED:" (a skip for
 * ctest) when this build has no zfp. */
static void zfp_round_trip(const cairn_comm* comm, int rank, int size) {
  static const int formats[2] = {CAIRN_FORMAT_POSIX, CAIRN_FORMAT_HDF5};
  const double bound = 1e-3;
  cairn_checkpointer* c = NULL;
  cairn_save_options s;
  cairn_leaf_save_args args;
  cairn_tree* target = NULL;
  double u[BLOCK];
  int32_t count = -1;
  int f;
  int i;
  CHECK_OK(cairn_checkpointer_create(comm, 0, &c));
  CHECK_OK(cairn_leaf_save_args_init(&args, sizeof args));
  args.path = "u";
  args.compression.kind = CAIRN_COMPRESSION_ZFP;
  args.compression.absolute_error = bound;
  for (f = 0; f < (CAIRN_TEST_HDF5 ? 2 : 1); ++f) {
    const char* dir = capi_test_path(f == 0 ? "zfp_posix" : "zfp_hdf5");
    cairn_status status;
    CHECK_OK(cairn_save_options_init(&s, sizeof s));
    s.format = formats[f];
    s.save_args = &args;
    s.save_args_count = 1;
    status = save_u(c, dir, &s, rank, size);
    if (status == CAIRN_ERR_UNSUPPORTED && !CAIRN_TEST_ZFP) {
      if (rank == 0) printf("SKIPPED: zfp save unsupported: %s\n", cairn_last_error());
      break;
    }
    CHECK_OK(status);
    target = make_tree("u", u, size - 1 - rank, size, 0, &count);
    CHECK_OK(cairn_checkpointer_restore(c, dir, target, NULL));
    for (i = 0; i < BLOCK; ++i) {
      const double saved = field_value((int64_t)BLOCK * (size - 1 - rank) + i);
      CHECK(u[i] - saved <= bound && saved - u[i] <= bound);
    }
    CHECK(count == size - 1 - rank);
    cairn_tree_free(target);
  }
  cairn_checkpointer_free(c);
}

static const capi_test_scenario scenarios[] = {
    {"cast_posix", cast_posix},           {"cast_hdf5", cast_hdf5},
    {"rename", rename_scenario},          {"resize", resize_scenario},
    {"invalid", invalid_scenario},        {"compression_invalid", compression_invalid},
    {"zstd_round_trip", zstd_round_trip}, {"zfp_round_trip", zfp_round_trip},
    {"derived", derived_scenario},        {"leaf_format", leaf_format},
};

int main(int argc, char** argv) {
  return capi_test_main(argc, argv, "test_capi_leaf_options", scenarios,
                        sizeof scenarios / sizeof scenarios[0]);
}
