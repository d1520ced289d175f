/* cairn C ABI — the option structs of managers, saves and restores. Part of <cairn/cairn.h>, which
 * includes every part and states the conventions of the ABI (status codes, option structs,
 * collective calls). */
#ifndef CAIRN_C_OPTIONS_H
#define CAIRN_C_OPTIONS_H

#include <cairn/c/policies.h>
#include <cairn/c/tree.h>

#ifdef __cplusplus
extern "C" {
#endif

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
  CAIRN_STEP_NAME_JOINED = 1,   /* <prefix><step>, no separator (CLU's ckpt-<n>) */
  CAIRN_STEP_NAME_CLU = 2,      /* CLU's ckpt-<n> (step_prefix must be empty) */
  CAIRN_STEP_NAME_CUSTOM = 3    /* the caller's step_name_build and step_name_parse */
};

/* A custom step name format (CAIRN_STEP_NAME_CUSTOM): writes the directory name of `step`
 * (>= 0; not empty, no '/') NUL-terminated into `name`, which holds `capacity` bytes; returns 0,
 * or nonzero when it cannot (the save or listing then fails naming the step). Must give every
 * rank the same name. */
typedef int (*cairn_step_name_build_fn)(int64_t step, char* name, size_t capacity, void* user_data);
/* The step that the directory name `name` stands for, in *step, with a nonzero return; 0 when
 * `name` is not a step name of this format. A name it accepts must be the one the build
 * function gives for that step. */
typedef int (*cairn_step_name_parse_fn)(const char* name, int64_t* step, void* user_data);

/* The number a step is ranked by (cairn_manager_options.best_fn; C++ best_fn), from the JSON
 * object of the metrics saved with it (`metrics_json`, NUL-terminated, valid during the call):
 * returns nonzero with *value set, or 0 when the step has no such number (it then counts as
 * saved without metrics, see keep_checkpoints_without_metrics). Called by retention after each
 * commit on the primary rank only, and by cairn_manager_best_step on every rank; it must give
 * every rank the same answer. */
typedef int (*cairn_best_fn)(const char* metrics_json, double* value, void* user_data);
/* Told that `step` is committed (cairn_manager_options.on_commit; C++ on_commit), with the JSON
 * object of its metrics (`metrics_json`, NUL-terminated, valid during the call; "{}" without
 * metrics), before retention runs: the place to report a step as saved. Called on every active
 * rank, on the thread that called the manager function that found the commit:
 * cairn_manager_save for a synchronous save; for an async one the first should_save, save,
 * check_for_errors, wait_until_finished, restore or close after every rank finished it.
 * Returns 0; a nonzero return on any rank makes that function fail on every rank with
 * CAIRN_ERR_INVALID_ARGUMENT naming the step, which stays committed. It runs while the manager
 * holds its lock: it may call the manager's non-collective functions only. */
typedef int (*cairn_on_commit_fn)(int64_t step, const char* metrics_json, void* user_data);

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
  /* fields appended in 0.1: the rest of Orbax's and CLU's options */
  cairn_clock_fn clock;  /* [NULL: the system clock] "now" of every time-based decision:
                            save policies, keep_time_interval_s, the time stored with a step */
  void* clock_user_data; /* [NULL] passed to clock */
  cairn_should_save_latest_fn should_save_latest_fn; /* [NULL] as should_save_fn, told the
                                                        newest saved step (user data:
                                                        should_save_user_data); not with
                                                        should_save_fn */
  cairn_should_keep_fn should_keep_fn;               /* [NULL] also keep what it keeps (Orbax) */
  void* should_keep_user_data;                       /* [NULL] passed to should_keep_fn */
  cairn_step_name_build_fn step_name_build;          /* [NULL] with CAIRN_STEP_NAME_CUSTOM */
  cairn_step_name_parse_fn step_name_parse;          /* [NULL] with CAIRN_STEP_NAME_CUSTOM */
  void* step_name_user_data;                         /* [NULL] passed to both */
  const char* step_name_description; /* [NULL: "custom"] stored in cairn-root.json */
  int prevent_write_metrics;      /* [0] the metrics of a save are not written with the step: this
                                     manager ranks by them until reload, later ones see none */
  const char* metadata_json;      /* [NULL] JSON object: the caller's metadata of the series, stored
                                     as "user" in cairn-root.json by the manager that creates it */
  int incremental;                /* [0] incremental saves: a save writes only the chunks of its
                                     posix array leaves that changed since the newest committed step
                                     and refers to the others (that step's files, hard-linked) */
  int64_t incremental_full_every; /* [8] with incremental: a save after a chain of this many
                                     steps writes whole, so that a damaged file reaches at
                                     most this many steps; 1: every save whole */
  /* fields appended in 0.2: the node-local level (cairn::LocalLevelOptions); local_dir NULL:
     every save goes to the root */
  const char* local_dir;         /* [NULL] node-local directory (tmpfs, NVMe); "{node}" in it
                                    is replaced by the node number */
  const char* local_redundancy;  /* [NULL: "none"] "none", "partner", "partner=D", "xor",
                                    "xor=G": copies of each node's files on other nodes */
  int local_keep;                /* [2] local steps kept on each node */
  int64_t persistent_every;      /* [1] drain every this many local saves to the root; 0:
                                    only the preemption save and the one at close */
  int drain_at_close;            /* [1] drain the newest local step at close when newer than
                                    the newest persistent one */
  double drain_bytes_per_second; /* [0] pace of the drain on each rank; 0: unpaced */
  int ranks_per_node;            /* [0] group this many consecutive ranks into one simulated
                                    node; 0: the nodes MPI reports (or CAIRN_RANKS_PER_NODE) */
  /* fields appended in 0.3: the rest of CheckpointManagerOptions' callbacks and AsyncOptions */
  cairn_best_fn best_fn;        /* [NULL] rank steps by what it returns, in place of best_metric
                                   (giving both is CAIRN_ERR_INVALID_ARGUMENT); best_mode,
                                   max_to_keep and keep_checkpoints_without_metrics as with
                                   best_metric */
  void* best_user_data;         /* [NULL] passed to best_fn */
  cairn_on_commit_fn on_commit; /* [NULL] told each committed step (see cairn_on_commit_fn) */
  void* on_commit_user_data;    /* [NULL] passed to on_commit */
  int async_device_staging;     /* [0] async saves snapshot CUDA device leaves into new device
                                   memory (device-to-device) when the device has room, instead of
                                   into the host staging area; the background thread copies them
                                   to the host (AsyncOptions::device_staging, docs/gpu.md) */
} cairn_manager_options;

/* Fills *options with the defaults for a caller that knows `struct_size` bytes of it. */
CAIRN_C_API cairn_status cairn_manager_options_init(cairn_manager_options* options,
                                                    size_t struct_size);

/* Compressions of stored array bytes (cairn_compression.kind). */
enum {
  CAIRN_COMPRESSION_DEFAULT = -1, /* per leaf only: the save's compression */
  CAIRN_COMPRESSION_NONE = 0,     /* stored as they are */
  CAIRN_COMPRESSION_ZSTD = 1,     /* lossless (Zstandard) */
  CAIRN_COMPRESSION_ZFP = 2       /* lossy with an error bound (ZFP): float32 and float64 only */
};

/* How array bytes are compressed (cairn::Compression). A save with a compression this build
 * lacks (libzstd, libzfp) fails on every rank with CAIRN_ERR_UNSUPPORTED; zfp on a leaf that
 * is not float32 or float64, zfp without a positive bound, or a zstd level outside 0..19 fails
 * with CAIRN_ERR_INVALID_ARGUMENT naming the leaf. */
typedef struct cairn_compression {
  int kind;              /* CAIRN_COMPRESSION_* */
  int level;             /* zstd: 1 (fastest) to 19; 0: cairn's default, 1 */
  double absolute_error; /* zfp: every restored element is within this of the saved one
                            (used when positive) */
  double relative_error; /* zfp: ... within this fraction of the largest magnitude of its
                            chunk (posix) or leaf (hdf5) (used when positive and
                            absolute_error is not) */
} cairn_compression;

/* How one array leaf is saved (cairn::LeafSaveArgs, Orbax's SaveArgs): an element of
 * cairn_save_options.save_args. Defaults in brackets, set by cairn_leaf_save_args_init. */
typedef struct cairn_leaf_save_args {
  size_t struct_size;            /* sizeof(cairn_leaf_save_args) as the caller knows it; every
                                    element of one save_args array has the same */
  const char* path;              /* the array leaf's path (required) */
  int dtype;                     /* [-1: as the leaf's] the dtype stored on disk: the shard is
                                    cast while written (float64 state stored as float32), with
                                    the checks of value-checked casts; restore it into the
                                    leaf's own dtype with allow_cast */
  size_t chunk_bytes;            /* [0: the save's checksum_chunk_bytes] bytes of this leaf's
                                    checksum chunks (rounded down to whole elements) */
  cairn_compression compression; /* [CAIRN_COMPRESSION_DEFAULT] this leaf's compression */
  const int64_t* chunk_shape;    /* [NULL] hdf5: shape of the stored chunks of the leaf's
                                    dataset, one extent >= 1 per dimension (posix ignores it) */
  int chunk_shape_ndim;          /* [0] extents in chunk_shape */
  int format;                    /* [-1: the save's format] CAIRN_FORMAT_POSIX or _HDF5 for
                                    this leaf */
} cairn_leaf_save_args;

/* Fills *args with the defaults for a caller that knows `struct_size` bytes of it. Not
 * collective. CAIRN_ERR_INVALID_ARGUMENT for a NULL args or a struct_size smaller than a
 * size_t. */
CAIRN_C_API cairn_status cairn_leaf_save_args_init(cairn_leaf_save_args* args, size_t struct_size);

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
  /* fields appended in 0.1: per-leaf save arguments and compression. Every rank must pass the
     same; a save_args path that is not an array leaf of the tree, or a stored dtype the leaf
     cannot be cast to (complex to real), fails with CAIRN_ERR_INVALID_ARGUMENT naming it */
  size_t checksum_chunk_bytes;           /* [1 MiB] bytes of a checksum chunk (>= 1) */
  cairn_compression compression;         /* [CAIRN_COMPRESSION_NONE] of every array leaf
                                            without its own in save_args */
  const cairn_leaf_save_args* save_args; /* [NULL] per-leaf arguments, one leaf each */
  size_t save_args_count;                /* [0] */
  const char* const* sparse_leaves;      /* [NULL] with allow_sparse: only these leaves may
                                            leave holes (none listed: every leaf) */
  size_t sparse_leaves_count;            /* [0] */
  size_t io_buffer_bytes;                /* [16 MiB] staging of strided and device shards */
  int detect_device_memory;              /* [0] host leaves whose pointer is device memory
                                            are saved as device memory */
} cairn_save_options;

/* Fills *options with the defaults for a caller that knows `struct_size` bytes of it. */
CAIRN_C_API cairn_status cairn_save_options_init(cairn_save_options* options, size_t struct_size);

/* A rename rule of a restore (cairn::LeafRename, Orbax's restore transforms): target leaves
 * whose whole path matches `target`, an ECMAScript regular expression, are read from the saved
 * leaf `saved`, in which $1, $2, ... stand for the groups of the match. Example:
 * {"blocks/(\\d+)/weight", "params/layer$1/w"}. */
typedef struct cairn_leaf_rename {
  const char* target; /* pattern matched against the whole target leaf path */
  const char* saved;  /* the saved leaf's path, with $1, $2, ... */
} cairn_leaf_rename;

/* A target array leaf whose global shape may differ from the saved one (same number of
 * dimensions): it gets the saved elements inside both shapes, and `fill` elsewhere. */
typedef struct cairn_leaf_resize {
  const char* path; /* the target leaf's path */
  int fill_dtype;   /* the dtype of *fill (converted to the target's with value checks) */
  const void* fill; /* cairn_dtype_size(fill_dtype) bytes: the value of the padding */
} cairn_leaf_resize;

/* Fills this rank's box of a derived target leaf (cairn_derived_leaf.fill) from its sources.
 * `sources[i]` is this rank's box of saved leaf sources[i] of the rule, restored (any N->M,
 * verified as any read) into a contiguous host buffer in its saved dtype; `target` is the
 * target leaf's shard (host memory; strides, when not NULL, in elements). Both describe the
 * same box of the same global shape. Called on every rank during the restore, also with an
 * empty box; returns 0, or nonzero to fail the restore on every rank with
 * CAIRN_ERR_INVALID_ARGUMENT naming the target leaf. */
typedef int (*cairn_derive_fn)(const cairn_array_desc* sources, size_t source_count,
                               const cairn_array_desc* target, void* user_data);

/* A target array leaf computed from several saved leaves (cairn::DerivedLeaf, Orbax's restore
 * transforms with a function of several saved leaves), e.g. a velocity saved as two
 * components restored as its magnitude. The target is not read itself (renames do not apply
 * to it); a source missing on disk is CAIRN_ERR_NOT_FOUND naming it, unless the target is an
 * optional leaf. A target that is not an array leaf of the restore target, a rule without
 * sources or fill, or a source of another global shape is CAIRN_ERR_INVALID_ARGUMENT; a
 * device target is CAIRN_ERR_UNSUPPORTED. */
typedef struct cairn_derived_leaf {
  const char* target;         /* the target array leaf's path */
  const char* const* sources; /* the saved array leaves it is computed from (saved paths) */
  size_t source_count;        /* at least 1 */
  cairn_derive_fn fill;       /* fills the target's box */
  void* user_data;            /* passed to fill */
} cairn_derived_leaf;

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
  /* fields appended in 0.1: the rest of TreeRestoreOptions (target restores only; every rank
     must pass the same). A rename pattern that is not a regular expression, a saved path that
     is not a leaf path, or a NULL string fails with CAIRN_ERR_INVALID_ARGUMENT naming it */
  const cairn_leaf_rename* renames; /* [NULL] the first rule matching a target leaf names the
                                       saved leaf it is read from */
  size_t renames_count;             /* [0] */
  int default_to_original;          /* [1] a target leaf no rule matches is read from the saved
                                       leaf of its own path (0: it is not found, unless
                                       optional) */
  const cairn_leaf_resize* resize_leaves;   /* [NULL] leaves whose shape may differ (pad or
                                               truncate; host targets only) */
  size_t resize_leaves_count;               /* [0] */
  size_t restore_concurrent_bytes;          /* [16 MiB] bytes a rank holds in flight while it
                                               reads (Orbax's restore_concurrent_gb) */
  int load_and_broadcast;                   /* [0] replicated leaves are read by one rank and
                                               broadcast */
  int detect_device_memory;                 /* [0] host leaves whose pointer is device memory
                                               are treated as device memory */
  const cairn_derived_leaf* derived_leaves; /* [NULL] target leaves computed from several saved
                                               leaves; the sources of one are held in memory
                                               together while its fill runs */
  size_t derived_leaves_count;              /* [0] */
} cairn_restore_options;

/* Fills *options with the defaults for a caller that knows `struct_size` bytes of it. */
CAIRN_C_API cairn_status cairn_restore_options_init(cairn_restore_options* options,
                                                    size_t struct_size);

#ifdef __cplusplus
}
#endif

#endif /* CAIRN_C_OPTIONS_H */
