#include <cairn/cairn.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  cairn_set_error_mode(CAIRN_ERRORS_FATAL); /* a failing call prints why and ends the job */
  int rank, size, found, ok = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int64_t n = 1 << 20, first = n * rank / size, count = n * (rank + 1) / size - first;
  double* u = calloc((size_t)count, sizeof *u);
  cairn_comm* comm;
  cairn_comm_create(MPI_COMM_WORLD, &comm);
  cairn_tree* state; /* refers to u: saving reads it, restoring writes into it */
  cairn_tree_create(&state);
  cairn_tree_add_array(state, "u", CAIRN_FLOAT64, 1, &n, &first, &count, u, 0);
  cairn_manager_options opts;
  cairn_manager_options_init(&opts, sizeof opts);
  opts.save_interval_steps = 10;
  opts.max_to_keep = 2;
  cairn_manager* mgr;
  cairn_manager_create(comm, "quickstart-run", &opts, &mgr);
  int64_t step; /* the newest step that restores, on any number of ranks (0: none) */
  cairn_manager_restore_latest_intact(mgr, state, NULL, &step, &found);
  for (++step; step <= 100; ++step) {
    for (int64_t i = 0; i < count; ++i) u[i] += 1.0; /* the simulation */
    cairn_manager_save(mgr, step, state, NULL, NULL);
  }
  for (int64_t i = 0; i < count; ++i) ok = ok && u[i] == 100.0;
  cairn_manager_free(mgr); /* waits for the last save */
  cairn_tree_free(state);
  cairn_comm_free(comm);
  free(u);
  MPI_Finalize();
  return ok ? 0 : 1;
}
