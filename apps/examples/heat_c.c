/* cairn from C: a 1-D heat equation on N cells split over the ranks, checkpointed every 5
 * steps (the newest 2 are kept) and resumed from the newest checkpoint on restart, on any
 * number of ranks:
 *   mpiexec -n 4 cairn_example_c run-c 20   # steps 0..19
 *   mpiexec -n 2 cairn_example_c run-c 40   # resumes after the newest saved step
 * When preempted (SIGTERM or SIGUSR1 on any rank, as Slurm's --signal sends it, or the Slurm
 * time limit within 60 s) it saves the step it is at and stops; run it again to continue.
 * Every cairn call returns a status; on failure cairn_last_error() says what and where. */
#include <cairn/cairn.h>

#include <stdio.h>
#include <stdlib.h>

enum { N = 64 };

/* Stops the job with cairn's message when a call failed. */
static void check(cairn_status status) {
  if (status != CAIRN_OK) {
    fprintf(stderr, "cairn: %s\n", cairn_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

int main(int argc, char** argv) {
  const char* root = argc > 1 ? argv[1] : "run-c";
  const int64_t steps = argc > 2 ? atoll(argv[2]) : 20;
  const int64_t global[1] = {N};
  int64_t offset[1];
  int64_t local[1];
  int64_t step = 0;
  int64_t latest = 0;
  int found = 0;
  int preempted = 0;
  int rank = 0;
  int size = 1;
  double* u;
  double* halo;
  cairn_comm* comm = NULL;
  cairn_manager* manager = NULL;
  cairn_manager_options options;
  cairn_tree* state = NULL;
  int64_t i;

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  offset[0] = N * rank / size; /* this rank's cells: [offset, offset + local) */
  local[0] = N * (rank + 1) / size - offset[0];
  u = calloc((size_t)local[0], sizeof *u);
  halo = calloc((size_t)local[0] + 2, sizeof *halo);

  /* The state to checkpoint: this rank's box of the global array "u" and the step. The tree
   * refers to `u` (no copy): saving reads it, restoring writes into it. */
  check(cairn_comm_create(MPI_COMM_WORLD, &comm));
  check(cairn_tree_create(&state));
  check(cairn_tree_add_array(state, "u", CAIRN_FLOAT64, 1, global, offset, local, u, 0));
  check(cairn_tree_add_scalar(state, "step", CAIRN_INT64, &step));

  /* Options: defaults first (init), then what differs. */
  check(cairn_manager_options_init(&options, sizeof options));
  options.save_interval_steps = 5;
  options.max_to_keep = 2;
  options.enable_preemption = 1;
  options.preemption_margin_s = 60.0;
  check(cairn_manager_create(comm, root, &options, &manager));

  /* Resume: read the newest checkpoint into our buffers, whatever decomposition wrote it. */
  check(cairn_manager_latest_step(manager, &latest, &found));
  if (found) {
    check(cairn_manager_restore(manager, latest, state, NULL));
    check(cairn_tree_get_scalar(state, "step", CAIRN_INT64, &step));
    ++step;
  } else if (rank == 0) {
    u[0] = 1000.0; /* a hot cell at the left end */
  }

  for (; step < steps; ++step) {
    double left = 0.0;
    double right = 0.0;
    const int up = rank + 1 < size ? rank + 1 : MPI_PROC_NULL;
    const int down = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    MPI_Sendrecv(&u[local[0] - 1], 1, MPI_DOUBLE, up, 0, &left, 1, MPI_DOUBLE, down, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&u[0], 1, MPI_DOUBLE, down, 1, &right, 1, MPI_DOUBLE, up, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    halo[0] = left;
    for (i = 0; i < local[0]; ++i) halo[i + 1] = u[i];
    halo[local[0] + 1] = right;
    for (i = 0; i < local[0]; ++i) u[i] += 0.25 * (halo[i] - 2.0 * halo[i + 1] + halo[i + 2]);

    /* The scalar leaf holds a copy of `step`: replace the tree's value before saving. The
     * manager decides (every 5th step, or when preempted) and saves in the background.
     * reached_preemption is collective: every rank sees the signal at the same step. */
    {
      int should = 0;
      check(cairn_manager_reached_preemption(manager, step, &preempted));
      check(cairn_manager_should_save(manager, step, &should));
      if (should || preempted) {
        cairn_tree* snapshot = NULL;
        check(cairn_tree_create(&snapshot));
        check(cairn_tree_add_array(snapshot, "u", CAIRN_FLOAT64, 1, global, offset, local, u, 0));
        check(cairn_tree_add_scalar(snapshot, "step", CAIRN_INT64, &step));
        check(cairn_manager_save(manager, step, snapshot, NULL, NULL));
        cairn_tree_free(snapshot);
      }
    }
    if (preempted) break;
  }

  check(cairn_manager_wait_until_finished(manager));
  check(cairn_manager_latest_step(manager, &latest, &found));
  if (rank == 0 && preempted)
    printf("heat_c: preempted: saved step %lld and stopped; run again to continue\n",
           (long long)latest);
  if (rank == 0)
    printf("heat_c: %d ranks, newest checkpoint: step %lld\n", size, (long long)latest);
  check(cairn_manager_free(manager));
  cairn_tree_free(state);
  cairn_comm_free(comm);
  free(halo);
  free(u);
  MPI_Finalize();
  return 0;
}
