/* cairn C ABI — the option structs of managers, saves and restores. Part of <cairn/cairn.h>, which
 * includes every part and states the conventions of the ABI (status codes, option structs,
 * collective calls). */
#ifndef CAIRN_C_OPTIONS_H
#define CAIRN_C_OPTIONS_H

#include <cairn/c/policies.h>

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
  int prevent_write_metrics; /* [0] the metrics of a save are not written with the step: this
                                manager ranks by them until reload, later ones see none */
  const char* metadata_json; /* [NULL] JSON object: the caller's metadata of the series, stored
                                as "user" in cairn-root.json by the manager that creates it */
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

#ifdef __cplusplus
}
#endif

#endif /* CAIRN_C_OPTIONS_H */
