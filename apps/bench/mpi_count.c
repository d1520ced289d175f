// libcairn_mpi_count: a PMPI layer that counts the collective (and point-to-point) MPI calls
// of a process, per phase, for the scaling benchmark (apps/bench/scaling.py preloads it into
// cairn_bench with LD_PRELOAD).
//
// Phases: MPI_Pcontrol(1, "name") starts phase "name" (counters at zero), MPI_Pcontrol(0) ends
// it and keeps its counts. Calls outside a phase are not recorded. At MPI_Finalize every rank
// writes its phases as JSON lines to $CAIRN_MPI_COUNT_DIR/rank-<world rank>.jsonl:
//   {"rank": 0, "phase": "save", "seq": 0, "calls": {"MPI_Ibcast": 3, ...},
//    "bytes": {"MPI_Ibcast": 1234, ...}, "rchar": 5678, "read_bytes": 0}
// "bytes" is the payload this rank receives (broadcast at a non-root, gather at the root,
// allgather and allreduce everywhere; the send side of point-to-point); "rchar" is the growth of
// /proc/self/io's rchar over the phase (bytes this process read through read()-like calls,
// page cache or not). Without CAIRN_MPI_COUNT_DIR the layer counts and writes nothing.
// Counters are atomic: calls from other threads inside a phase are counted too.
#include <mpi.h>

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The wrapped functions: their counters and names.
enum {
  k_MPI_Barrier,
  k_MPI_Ibarrier,
  k_MPI_Bcast,
  k_MPI_Ibcast,
  k_MPI_Allreduce,
  k_MPI_Iallreduce,
  k_MPI_Reduce,
  k_MPI_Ireduce,
  k_MPI_Allgather,
  k_MPI_Iallgather,
  k_MPI_Allgatherv,
  k_MPI_Iallgatherv,
  k_MPI_Gather,
  k_MPI_Igather,
  k_MPI_Gatherv,
  k_MPI_Igatherv,
  k_MPI_Scatter,
  k_MPI_Scatterv,
  k_MPI_Alltoall,
  k_MPI_Ialltoall,
  k_MPI_Alltoallv,
  k_MPI_Ialltoallv,
  k_MPI_Comm_dup,
  k_MPI_Comm_split,
  k_MPI_Comm_split_type,
  k_MPI_Comm_create,
  k_MPI_File_open,
  k_MPI_File_close,
  k_MPI_File_set_view,
  k_MPI_File_set_size,
  k_MPI_File_sync,
  k_MPI_File_write_all,
  k_MPI_File_write_at_all,
  k_MPI_File_read_all,
  k_MPI_File_read_at_all,
  k_MPI_Send,
  k_MPI_Isend,
  k_MPI_Recv,
  k_MPI_Irecv,
  k_count
};
static const char* const k_names[k_count] = {
    "MPI_Barrier",
    "MPI_Ibarrier",
    "MPI_Bcast",
    "MPI_Ibcast",
    "MPI_Allreduce",
    "MPI_Iallreduce",
    "MPI_Reduce",
    "MPI_Ireduce",
    "MPI_Allgather",
    "MPI_Iallgather",
    "MPI_Allgatherv",
    "MPI_Iallgatherv",
    "MPI_Gather",
    "MPI_Igather",
    "MPI_Gatherv",
    "MPI_Igatherv",
    "MPI_Scatter",
    "MPI_Scatterv",
    "MPI_Alltoall",
    "MPI_Ialltoall",
    "MPI_Alltoallv",
    "MPI_Ialltoallv",
    "MPI_Comm_dup",
    "MPI_Comm_split",
    "MPI_Comm_split_type",
    "MPI_Comm_create",
    "MPI_File_open",
    "MPI_File_close",
    "MPI_File_set_view",
    "MPI_File_set_size",
    "MPI_File_sync",
    "MPI_File_write_all",
    "MPI_File_write_at_all",
    "MPI_File_read_all",
    "MPI_File_read_at_all",
    "MPI_Send",
    "MPI_Isend",
    "MPI_Recv",
    "MPI_Irecv",
};

static atomic_llong g_calls[k_count];
static atomic_llong g_bytes[k_count];
static atomic_int g_active;

enum { k_phase_name = 64 };
typedef struct {
  char name[k_phase_name];
  int seq;
  long long calls[k_count];
  long long bytes[k_count];
  long long rchar;
  long long read_bytes;
} Phase;

static Phase* g_phases;
static int g_phase_count;
static int g_phase_capacity;
static char g_current[k_phase_name];
static long long g_rchar_start;
static long long g_read_start;

// A field of /proc/self/io ("rchar", "read_bytes"), -1 when unreadable.
static long long io_field(const char* key) {
  FILE* file = fopen("/proc/self/io", "r");
  if (!file) return -1;
  char line[128];
  long long value = -1;
  const size_t length = strlen(key);
  while (fgets(line, sizeof line, file)) {
    if (strncmp(line, key, length) == 0 && line[length] == ':') {
      value = atoll(line + length + 1);
      break;
    }
  }
  fclose(file);
  return value;
}

static long long type_bytes(MPI_Datatype type, long long count) {
  int size = 0;
  if (type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS) return 0;
  return (long long)size * count;
}

static long long sum_counts(const int* counts, MPI_Comm comm) {
  int size = 0;
  if (!counts || PMPI_Comm_size(comm, &size) != MPI_SUCCESS) return 0;
  long long total = 0;
  for (int r = 0; r < size; ++r) total += counts[r];
  return total;
}

static int comm_rank(MPI_Comm comm) {
  int rank = -1;
  PMPI_Comm_rank(comm, &rank);
  return rank;
}

static void count(int which, long long bytes) {
  if (!atomic_load(&g_active)) return;
  atomic_fetch_add(&g_calls[which], 1);
  atomic_fetch_add(&g_bytes[which], bytes);
}

static int same_name(int seq_of, const char* name) {
  return strncmp(g_phases[seq_of].name, name, k_phase_name) == 0;
}

static void end_phase(void) {
  if (!atomic_exchange(&g_active, 0)) return;
  if (g_phase_count == g_phase_capacity) {
    const int capacity = g_phase_capacity ? 2 * g_phase_capacity : 64;
    Phase* grown = realloc(g_phases, (size_t)capacity * sizeof(Phase));
    if (!grown) return;
    g_phases = grown;
    g_phase_capacity = capacity;
  }
  Phase* phase = &g_phases[g_phase_count];
  memcpy(phase->name, g_current, k_phase_name);
  phase->seq = 0;
  for (int k = 0; k < g_phase_count; ++k) phase->seq += same_name(k, g_current);
  for (int k = 0; k < k_count; ++k) {
    phase->calls[k] = atomic_load(&g_calls[k]);
    phase->bytes[k] = atomic_load(&g_bytes[k]);
  }
  phase->rchar = io_field("rchar") - g_rchar_start;
  phase->read_bytes = io_field("read_bytes") - g_read_start;
  ++g_phase_count;
}

int MPI_Pcontrol(const int level, ...) {
  end_phase();
  if (level != 1) return MPI_SUCCESS;
  va_list args;
  va_start(args, level);
  const char* name = va_arg(args, const char*);
  va_end(args);
  snprintf(g_current, sizeof g_current, "%s", name ? name : "phase");
  for (int k = 0; k < k_count; ++k) {
    atomic_store(&g_calls[k], 0);
    atomic_store(&g_bytes[k], 0);
  }
  g_rchar_start = io_field("rchar");
  g_read_start = io_field("read_bytes");
  atomic_store(&g_active, 1);
  return MPI_SUCCESS;
}

static void write_map(FILE* out, const char* key, const long long* values) {
  fprintf(out, ", \"%s\": {", key);
  int first = 1;
  for (int k = 0; k < k_count; ++k) {
    if (values[k] == 0) continue;
    fprintf(out, "%s\"%s\": %lld", first ? "" : ", ", k_names[k], values[k]);
    first = 0;
  }
  fputc('}', out);
}

static void write_phases(void) {
  const char* dir = getenv("CAIRN_MPI_COUNT_DIR");
  if (!dir || !*dir) return;
  const int rank = comm_rank(MPI_COMM_WORLD);
  char path[4096];
  snprintf(path, sizeof path, "%s/rank-%d.jsonl", dir, rank);
  FILE* out = fopen(path, "w");
  if (!out) {
    fprintf(stderr, "mpi_count (rank %d): cannot write %s\n", rank, path);
    return;
  }
  for (int p = 0; p < g_phase_count; ++p) {
    const Phase* phase = &g_phases[p];
    fprintf(out, "{\"rank\": %d, \"phase\": \"%s\", \"seq\": %d", rank, phase->name, phase->seq);
    write_map(out, "calls", phase->calls);
    write_map(out, "bytes", phase->bytes);
    fprintf(out, ", \"rchar\": %lld, \"read_bytes\": %lld}\n", phase->rchar, phase->read_bytes);
  }
  fclose(out);
}

int MPI_Finalize(void) {
  end_phase();
  write_phases();
  free(g_phases);
  g_phases = NULL;
  return PMPI_Finalize();
}

// --- Collectives: count, then call the PMPI entry point.

int MPI_Barrier(MPI_Comm comm) {
  count(k_MPI_Barrier, 0);
  return PMPI_Barrier(comm);
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request* request) {
  count(k_MPI_Ibarrier, 0);
  return PMPI_Ibarrier(comm, request);
}

int MPI_Bcast(void* buffer, int n, MPI_Datatype type, int root, MPI_Comm comm) {
  count(k_MPI_Bcast, comm_rank(comm) == root ? 0 : type_bytes(type, n));
  return PMPI_Bcast(buffer, n, type, root, comm);
}

int MPI_Ibcast(void* buffer, int n, MPI_Datatype type, int root, MPI_Comm comm,
               MPI_Request* request) {
  count(k_MPI_Ibcast, comm_rank(comm) == root ? 0 : type_bytes(type, n));
  return PMPI_Ibcast(buffer, n, type, root, comm, request);
}

int MPI_Allreduce(const void* in, void* out, int n, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  count(k_MPI_Allreduce, type_bytes(type, n));
  return PMPI_Allreduce(in, out, n, type, op, comm);
}

int MPI_Iallreduce(const void* in, void* out, int n, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                   MPI_Request* request) {
  count(k_MPI_Iallreduce, type_bytes(type, n));
  return PMPI_Iallreduce(in, out, n, type, op, comm, request);
}

int MPI_Reduce(const void* in, void* out, int n, MPI_Datatype type, MPI_Op op, int root,
               MPI_Comm comm) {
  count(k_MPI_Reduce, comm_rank(comm) == root ? type_bytes(type, n) : 0);
  return PMPI_Reduce(in, out, n, type, op, root, comm);
}

int MPI_Ireduce(const void* in, void* out, int n, MPI_Datatype type, MPI_Op op, int root,
                MPI_Comm comm, MPI_Request* request) {
  count(k_MPI_Ireduce, comm_rank(comm) == root ? type_bytes(type, n) : 0);
  return PMPI_Ireduce(in, out, n, type, op, root, comm, request);
}

static long long gathered(MPI_Datatype type, int n, MPI_Comm comm) {
  int size = 0;
  PMPI_Comm_size(comm, &size);
  return type_bytes(type, (long long)n * size);
}

int MPI_Allgather(const void* in, int n_in, MPI_Datatype t_in, void* out, int n_out,
                  MPI_Datatype t_out, MPI_Comm comm) {
  count(k_MPI_Allgather, gathered(t_out, n_out, comm));
  return PMPI_Allgather(in, n_in, t_in, out, n_out, t_out, comm);
}

int MPI_Iallgather(const void* in, int n_in, MPI_Datatype t_in, void* out, int n_out,
                   MPI_Datatype t_out, MPI_Comm comm, MPI_Request* request) {
  count(k_MPI_Iallgather, gathered(t_out, n_out, comm));
  return PMPI_Iallgather(in, n_in, t_in, out, n_out, t_out, comm, request);
}

int MPI_Allgatherv(const void* in, int n_in, MPI_Datatype t_in, void* out, const int* counts,
                   const int* displs, MPI_Datatype t_out, MPI_Comm comm) {
  count(k_MPI_Allgatherv, type_bytes(t_out, sum_counts(counts, comm)));
  return PMPI_Allgatherv(in, n_in, t_in, out, counts, displs, t_out, comm);
}

int MPI_Iallgatherv(const void* in, int n_in, MPI_Datatype t_in, void* out, const int* counts,
                    const int* displs, MPI_Datatype t_out, MPI_Comm comm, MPI_Request* request) {
  count(k_MPI_Iallgatherv, type_bytes(t_out, sum_counts(counts, comm)));
  return PMPI_Iallgatherv(in, n_in, t_in, out, counts, displs, t_out, comm, request);
}

int MPI_Gather(const void* in, int n_in, MPI_Datatype t_in, void* out, int n_out,
               MPI_Datatype t_out, int root, MPI_Comm comm) {
  count(k_MPI_Gather, comm_rank(comm) == root ? gathered(t_out, n_out, comm) : 0);
  return PMPI_Gather(in, n_in, t_in, out, n_out, t_out, root, comm);
}

int MPI_Igather(const void* in, int n_in, MPI_Datatype t_in, void* out, int n_out,
                MPI_Datatype t_out, int root, MPI_Comm comm, MPI_Request* request) {
  count(k_MPI_Igather, comm_rank(comm) == root ? gathered(t_out, n_out, comm) : 0);
  return PMPI_Igather(in, n_in, t_in, out, n_out, t_out, root, comm, request);
}

int MPI_Gatherv(const void* in, int n_in, MPI_Datatype t_in, void* out, const int* counts,
                const int* displs, MPI_Datatype t_out, int root, MPI_Comm comm) {
  const int at_root = comm_rank(comm) == root;
  count(k_MPI_Gatherv, at_root ? type_bytes(t_out, sum_counts(counts, comm)) : 0);
  return PMPI_Gatherv(in, n_in, t_in, out, counts, displs, t_out, root, comm);
}

int MPI_Igatherv(const void* in, int n_in, MPI_Datatype t_in, void* out, const int* counts,
                 const int* displs, MPI_Datatype t_out, int root, MPI_Comm comm,
                 MPI_Request* request) {
  const int at_root = comm_rank(comm) == root;
  count(k_MPI_Igatherv, at_root ? type_bytes(t_out, sum_counts(counts, comm)) : 0);
  return PMPI_Igatherv(in, n_in, t_in, out, counts, displs, t_out, root, comm, request);
}

int MPI_Scatter(const void* in, int n_in, MPI_Datatype t_in, void* out, int n_out,
                MPI_Datatype t_out, int root, MPI_Comm comm) {
  count(k_MPI_Scatter, type_bytes(t_out, n_out));
  return PMPI_Scatter(in, n_in, t_in, out, n_out, t_out, root, comm);
}

int MPI_Scatterv(const void* in, const int* counts, const int* displs, MPI_Datatype t_in, void* out,
                 int n_out, MPI_Datatype t_out, int root, MPI_Comm comm) {
  count(k_MPI_Scatterv, type_bytes(t_out, n_out));
  return PMPI_Scatterv(in, counts, displs, t_in, out, n_out, t_out, root, comm);
}

int MPI_Alltoall(const void* in, int n_in, MPI_Datatype t_in, void* out, int n_out,
                 MPI_Datatype t_out, MPI_Comm comm) {
  count(k_MPI_Alltoall, gathered(t_out, n_out, comm));
  return PMPI_Alltoall(in, n_in, t_in, out, n_out, t_out, comm);
}

int MPI_Alltoallv(const void* in, const int* n_in, const int* d_in, MPI_Datatype t_in, void* out,
                  const int* n_out, const int* d_out, MPI_Datatype t_out, MPI_Comm comm) {
  count(k_MPI_Alltoallv, type_bytes(t_out, sum_counts(n_out, comm)));
  return PMPI_Alltoallv(in, n_in, d_in, t_in, out, n_out, d_out, t_out, comm);
}

int MPI_Ialltoall(const void* in, int n_in, MPI_Datatype t_in, void* out, int n_out,
                  MPI_Datatype t_out, MPI_Comm comm, MPI_Request* request) {
  count(k_MPI_Ialltoall, gathered(t_out, n_out, comm));
  return PMPI_Ialltoall(in, n_in, t_in, out, n_out, t_out, comm, request);
}

int MPI_Ialltoallv(const void* in, const int* n_in, const int* d_in, MPI_Datatype t_in,
                   void* out, const int* n_out, const int* d_out, MPI_Datatype t_out,
                   MPI_Comm comm, MPI_Request* request) {
  count(k_MPI_Ialltoallv, type_bytes(t_out, sum_counts(n_out, comm)));
  return PMPI_Ialltoallv(in, n_in, d_in, t_in, out, n_out, d_out, t_out, comm, request);
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* out) {
  count(k_MPI_Comm_dup, 0);
  return PMPI_Comm_dup(comm, out);
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* out) {
  count(k_MPI_Comm_split, 0);
  return PMPI_Comm_split(comm, color, key, out);
}

int MPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm* out) {
  count(k_MPI_Comm_split_type, 0);
  return PMPI_Comm_split_type(comm, type, key, info, out);
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* out) {
  count(k_MPI_Comm_create, 0);
  return PMPI_Comm_create(comm, group, out);
}

// --- MPI-IO collectives (parallel HDF5 with the MPI-IO driver, MPI-IO baselines).

int MPI_File_open(MPI_Comm comm, const char* name, int mode, MPI_Info info, MPI_File* file) {
  count(k_MPI_File_open, 0);
  return PMPI_File_open(comm, name, mode, info, file);
}

int MPI_File_close(MPI_File* file) {
  count(k_MPI_File_close, 0);
  return PMPI_File_close(file);
}

int MPI_File_set_view(MPI_File file, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                      const char* rep, MPI_Info info) {
  count(k_MPI_File_set_view, 0);
  return PMPI_File_set_view(file, disp, etype, filetype, rep, info);
}

int MPI_File_set_size(MPI_File file, MPI_Offset size) {
  count(k_MPI_File_set_size, 0);
  return PMPI_File_set_size(file, size);
}

int MPI_File_sync(MPI_File file) {
  count(k_MPI_File_sync, 0);
  return PMPI_File_sync(file);
}

int MPI_File_write_all(MPI_File file, const void* buf, int n, MPI_Datatype type,
                       MPI_Status* status) {
  count(k_MPI_File_write_all, type_bytes(type, n));
  return PMPI_File_write_all(file, buf, n, type, status);
}

int MPI_File_write_at_all(MPI_File file, MPI_Offset at, const void* buf, int n, MPI_Datatype type,
                          MPI_Status* status) {
  count(k_MPI_File_write_at_all, type_bytes(type, n));
  return PMPI_File_write_at_all(file, at, buf, n, type, status);
}

int MPI_File_read_all(MPI_File file, void* buf, int n, MPI_Datatype type, MPI_Status* status) {
  count(k_MPI_File_read_all, type_bytes(type, n));
  return PMPI_File_read_all(file, buf, n, type, status);
}

int MPI_File_read_at_all(MPI_File file, MPI_Offset at, void* buf, int n, MPI_Datatype type,
                         MPI_Status* status) {
  count(k_MPI_File_read_at_all, type_bytes(type, n));
  return PMPI_File_read_at_all(file, at, buf, n, type, status);
}

// --- Point-to-point (the primary's agreement protocol): counted apart from the collectives.

int MPI_Send(const void* buf, int n, MPI_Datatype type, int to, int tag, MPI_Comm comm) {
  count(k_MPI_Send, type_bytes(type, n));
  return PMPI_Send(buf, n, type, to, tag, comm);
}

int MPI_Isend(const void* buf, int n, MPI_Datatype type, int to, int tag, MPI_Comm comm,
              MPI_Request* request) {
  count(k_MPI_Isend, type_bytes(type, n));
  return PMPI_Isend(buf, n, type, to, tag, comm, request);
}

int MPI_Recv(void* buf, int n, MPI_Datatype type, int from, int tag, MPI_Comm comm,
             MPI_Status* status) {
  count(k_MPI_Recv, 0);
  return PMPI_Recv(buf, n, type, from, tag, comm, status);
}

int MPI_Irecv(void* buf, int n, MPI_Datatype type, int from, int tag, MPI_Comm comm,
              MPI_Request* request) {
  count(k_MPI_Irecv, 0);
  return PMPI_Irecv(buf, n, type, from, tag, comm, request);
}
