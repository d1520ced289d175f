// heat2d — an explicit 2-D heat-equation solver over an MPI Cartesian decomposition that
// checkpoints with cairn::CheckpointManager, stops cleanly when preempted (SIGTERM or SIGUSR1,
// or the Slurm time limit drawing near) and restarts from the newest checkpoint on any number
// of ranks and any process grid. The result does not depend on the decomposition or on
// interruptions: the final field is bit-for-bit the same.
//
//   mpiexec -n 4 heat2d --steps 2000 --checkpoint-dir run --output u.bin
//   (interrupted, later)  mpiexec -n 3 heat2d --steps 2000 --checkpoint-dir run --output u.bin
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <cairn/manager.hpp>
#include <cairn/storage.hpp>

#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include "compression_option.hpp"
#include "format_option.hpp"
#include "grid.hpp"
#include "mpi_session.hpp"
#include "redundancy_option.hpp"

namespace {

struct Options {
  heat2d::Problem problem{.nx = 512, .ny = 512, .alpha = 0.2};
  std::int64_t steps = 1000;
  int px = 0;
  int py = 0;
  std::string checkpoint_dir = "heat2d-checkpoints";
  std::int64_t save_every = 100;
  int max_to_keep = 3;
  std::string format =
      cairn::storage_format_available(cairn::StorageFormat::hdf5) ? "hdf5" : "posix";
  std::string compression = "none";
  std::string posix_files = "per-rank";
  std::string posix_writers = "every-rank";
  bool incremental = false;
  std::string output;
  int margin_seconds = 60;
  int step_delay_ms = 0;
  bool quiet = false;
  // The node-local level (empty: none).
  std::string local_dir;
  std::string redundancy = "none";
  std::int64_t persistent_every = 10;
  int ranks_per_node = 0;
  bool no_final_drain = false;
};

// The aggregation of --posix-files (validated: per-rank, per-node or a positive number) and
// --posix-writers (validated: every-rank or aggregator).
cairn::PosixAggregation posix_files(const std::string& files, const std::string& writers) {
  using Kind = cairn::PosixAggregation::Kind;
  const auto who = writers == "aggregator" ? cairn::PosixAggregation::Writers::aggregator
                                           : cairn::PosixAggregation::Writers::every_rank;
  if (files == "per-rank") return {.kind = Kind::per_rank, .writers = who};
  if (files == "per-node") return {.kind = Kind::per_node, .writers = who};
  return {.kind = Kind::count, .count = std::stoi(files), .writers = who};
}

// A finite number: CLI::Range lets NaN through, since every comparison with it is false.
CLI::Validator finite_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const double value = std::strtod(text.c_str(), nullptr);
        return std::isfinite(value) ? std::string() : "'" + text + "' is not a finite number";
      },
      "FINITE");
}

// Accepts a whole number of cells from 1 to heat2d::kMaxSide along one side of the field.
CLI::Validator field_side(const char* what) {
  return CLI::Validator(
      [what](std::string& text) -> std::string {
        std::int64_t n = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
        if (ec == std::errc() && end == text.data() + text.size() && n >= 1 &&
            n <= heat2d::kMaxSide) {
          return {};
        }
        return "'" + text + "' is not a number of " + what + " from 1 to " +
               std::to_string(heat2d::kMaxSide);
      },
      "1.." + std::to_string(heat2d::kMaxSide));
}

void add_options(CLI::App& app, Options& o) {
  app.add_option("--nx", o.problem.nx, "Columns of the field")
      ->check(field_side("columns"))
      ->capture_default_str();
  app.add_option("--ny", o.problem.ny, "Rows of the field")
      ->check(field_side("rows"))
      ->capture_default_str();
  app.add_option("--alpha", o.problem.alpha, "Diffusion number dt*kappa/h^2 (stable up to 0.25)")
      ->check(finite_number())
      ->check(CLI::Range(0.0, 0.25))
      ->capture_default_str();
  app.add_option("--steps", o.steps, "Step to run to (counting from the start of the run)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--px", o.px, "Columns of the process grid (default: MPI_Dims_create)")
      ->check(CLI::PositiveNumber);
  app.add_option("--py", o.py, "Rows of the process grid (default: MPI_Dims_create)")
      ->check(CLI::PositiveNumber);
  app.add_option("--checkpoint-dir", o.checkpoint_dir,
                 "Checkpoint root (restarts from its newest step)")
      ->capture_default_str();
  app.add_option("--save-every", o.save_every, "Save a checkpoint every this many steps")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-to-keep", o.max_to_keep, "Checkpoints to keep")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--format", o.format, "Storage format of the field")
      ->check(CLI::IsMember(cairn_app::storage_format_names()))
      ->check(cairn_app::available_format())
      ->capture_default_str();
  app.add_option("--posix-files", o.posix_files,
                 "Shard files of format posix: per-rank, per-node, or a number of files (ranks "
                 "grouped in consecutive blocks)")
      ->check(CLI::IsMember({"per-rank", "per-node"}) | CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--posix-writers", o.posix_writers,
                 "Who writes a group's shard file (with --posix-files per-node or a number): "
                 "every-rank (each its own region) or aggregator (the others ship their shards "
                 "to it through node shared memory)")
      ->check(CLI::IsMember({"every-rank", "aggregator"}))
      ->capture_default_str();
  app.add_option("--compression", o.compression,
                 "Compression of the saved field: none, zstd or zstd=<level> (lossless), or "
                 "zfp=<absolute error> (lossy, every value restored within that error)")
      ->check(cairn_app::compression_option())
      ->capture_default_str();
  app.add_option("--output", o.output,
                 "Write the final field here: raw float64, row-major, ny x nx (for comparisons)");
  app.add_option("--preemption-margin", o.margin_seconds,
                 "Save and stop this many seconds before SLURM_JOB_END_TIME")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--step-delay-ms", o.step_delay_ms,
                 "Sleep this long after every step, so that a demonstration's signal finds the run "
                 "mid-way (the result does not change)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_flag("--incremental", o.incremental,
               "Incremental saves: a checkpoint writes only the chunks of the field (format "
               "posix) that changed since the newest one and refers to the others");
  app.add_flag("--quiet", o.quiet, "Print only the start, restarts and the end");
  app.add_option("--local-dir", o.local_dir,
                 "Save every checkpoint to this node-local directory first (a tmpfs or NVMe; "
                 "{node} is replaced by the node number); --checkpoint-dir then receives every "
                 "--persistent-every-th one, drained in the background");
  app.add_option("--redundancy", o.redundancy,
                 "Copies of each node's local files on other nodes: none, partner[=distance] "
                 "or xor[=group size]")
      ->check(cairn_app::redundancy_option())
      ->capture_default_str();
  app.add_option("--persistent-every", o.persistent_every,
                 "With --local-dir: drain every this many local saves to --checkpoint-dir "
                 "(0: only at preemption and at the end)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_flag("--no-final-drain", o.no_final_drain,
               "With --local-dir: end without draining the newest local step to "
               "--checkpoint-dir, as a job killed before its end would (`cairn drain` writes it "
               "there later)");
  app.add_option("--ranks-per-node", o.ranks_per_node,
                 "With --local-dir: group this many consecutive ranks into one simulated node "
                 "(0: the nodes MPI reports, or CAIRN_RANKS_PER_NODE)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

boost::json::object run_info(const Options& o, const heat2d::Grid& grid, std::int64_t step,
                             int ranks) {
  return {{"program", "heat2d"}, {"nx", o.problem.nx},
          {"ny", o.problem.ny},  {"alpha", o.problem.alpha},
          {"step", step},        {"target_steps", o.steps},
          {"ranks", ranks},      {"process_grid", {grid.py(), grid.px()}}};
}

// Restores the newest checkpoint that restores without error into `grid` (a damaged newer
// one is moved aside by the manager); returns its step (0 when there is none).
std::int64_t restart(cairn::CheckpointManager& mgr, const Options& o, heat2d::Grid& grid,
                     const cairn::Comm& comm) {
  std::vector<double> block(static_cast<std::size_t>(cairn::volume(grid.box())));
  cairn::ArrayTree target;
  target.add_array("u",
                   cairn::ArrayShard::host(block.data(), {o.problem.ny, o.problem.nx}, grid.box()));
  // The run record is checked against the shape heat2d writes: a field of the wrong kind
  // (a damaged or hand-edited file) makes that step damaged, and an older one is restored.
  const cairn::Composite both{
      {"run", std::make_shared<cairn::JsonRestore>(run_info(o, grid, 0, comm.size()))},
      {"field", std::make_shared<cairn::ArrayTreeRestore>(std::move(target))}};
  std::optional<cairn::RestoredStep> restored;
  try {
    restored = mgr.restore_latest_intact(&both);
  } catch (const cairn::InvalidArgument& e) {
    // The saved field does not fit the target: a checkpoint of another problem.
    throw cairn::InvalidArgument("the checkpoints in '" + o.checkpoint_dir +
                                 "' are of another problem (" + e.what() +
                                 "); use another --checkpoint-dir");
  }
  if (!restored) return 0;
  const std::int64_t step = restored->step;
  // Every rank reads the restored record and builds the report: whatever throws here throws on
  // every rank (run_all), so that no rank waits in a collective call for one that stopped.
  std::string report;
  comm.run_all("heat2d: restarting from step " + std::to_string(step) + ":", [&] {
    const cairn::LevelRestore level = mgr.last_restore();
    const auto run = std::any_cast<cairn::CompositeResult>(restored->result)
                         .get<boost::json::value>("run")
                         .as_object();
    const auto saved = [&](const char* key) { return boost::json::value_to<double>(run.at(key)); };
    if (saved("nx") != static_cast<double>(o.problem.nx) ||
        saved("ny") != static_cast<double>(o.problem.ny) || saved("alpha") != o.problem.alpha) {
      throw cairn::InvalidArgument("the checkpoints in '" + o.checkpoint_dir +
                                   "' are of another problem (" + boost::json::serialize(run) +
                                   "); use another --checkpoint-dir");
    }
    grid.load(block);
    const auto line = [&report](const std::string& text) { report += "heat2d: " + text + "\n"; };
    for (std::size_t i = 0; i < restored->quarantined.size(); ++i) {
      line("step " + std::to_string(restored->quarantined[i]) +
           " is damaged: moved aside and kept (see `cairn ls " + o.checkpoint_dir +
           "`): " + restored->errors.at(i));
    }
    const auto& g = run.at("process_grid").as_array();
    line("restarted from step " + std::to_string(step) + " (saved by " +
         std::to_string(run.at("ranks").as_int64()) + " ranks as " +
         std::to_string(g.at(0).as_int64()) + " x " + std::to_string(g.at(1).as_int64()) + ")" +
         (o.local_dir.empty() ? "" : ", read from the " + level.level));
    if (!level.rebuilt_nodes.empty()) {
      std::string nodes;
      for (const int n : level.rebuilt_nodes)
        nodes += (nodes.empty() ? "" : ", ") + std::to_string(n);
      line("rebuilt the local files of node " + nodes + " from their copies");
    }
    if (level.exchanged) {
      line(
          "the local step was saved under another process grid: its cells were exchanged "
          "between the nodes");
    }
    if (!o.local_dir.empty() && level.level == "persistent" && !level.why_not_local.empty()) {
      line("the local level could not serve: " + level.why_not_local);
    }
  });
  if (comm.is_primary()) std::fputs(report.c_str(), stdout);
  return step;
}

// What checkpointing costs the run, as SCR reports it: per save the time the solver was
// blocked and the time until the step was committed, and the totals at the end. The commit
// callback may run on the manager's thread, hence the mutex.
class SaveCosts {
 public:
  using Clock = std::chrono::steady_clock;
  explicit SaveCosts(std::uint64_t field_bytes) : field_bytes_(field_bytes) {}

  void started(std::int64_t step, Clock::time_point start, bool saved) {
    const std::scoped_lock lock(mutex_);
    const double blocked = std::chrono::duration<double>(Clock::now() - start).count();
    blocking_s_ += blocked;
    if (!saved) return;
    ++saves_;
    pending_[step] = {start, blocked};
  }
  // "blocked 0.012 s, committed after 0.034 s: 7.6 MiB at 223 MiB/s" for a committed step.
  std::string committed(std::int64_t step) {
    const std::scoped_lock lock(mutex_);
    const auto it = pending_.find(step);
    if (it == pending_.end()) return {};
    const double seconds = std::chrono::duration<double>(Clock::now() - it->second.start).count();
    const double blocked = it->second.blocked_s;
    pending_.erase(it);
    return fmt_cost(blocked, seconds);
  }
  // "3 saves of 7.6 MiB, blocked 0.05 s in all: 1.2% of the run's 4.1 s".
  std::string summary(Clock::time_point run_start) const {
    const std::scoped_lock lock(mutex_);
    const double run_s = std::chrono::duration<double>(Clock::now() - run_start).count();
    char text[200];
    std::snprintf(text, sizeof text,
                  "%lld save%s of %.1f MiB, blocked %.3f s in all: %.1f%% of the run's %.2f s",
                  static_cast<long long>(saves_), saves_ == 1 ? "" : "s", mib(field_bytes_),
                  blocking_s_, run_s > 0 ? 100.0 * blocking_s_ / run_s : 0.0, run_s);
    return text;
  }

 private:
  struct Pending {
    Clock::time_point start;
    double blocked_s = 0.0;
  };
  static double mib(std::uint64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }
  std::string fmt_cost(double blocked, double seconds) const {
    char text[160];
    std::snprintf(text, sizeof text,
                  "blocked %.3f s, committed after %.3f s: %.1f MiB at %.0f MiB/s", blocked,
                  seconds, mib(field_bytes_), seconds > 0 ? mib(field_bytes_) / seconds : 0.0);
    return text;
  }

  mutable std::mutex mutex_;
  std::uint64_t field_bytes_;
  std::int64_t saves_ = 0;
  double blocking_s_ = 0.0;
  std::map<std::int64_t, Pending> pending_;
};

// Saves `step` when the manager's policy says so (its interval, or preemption), or always with
// `force`; returns whether a save started.
bool save(cairn::CheckpointManager& mgr, const Options& o, heat2d::Grid& grid,
          const cairn::Comm& comm, std::int64_t step, double change, bool force, SaveCosts& costs) {
  const auto start = SaveCosts::Clock::now();
  double residual = 0.0;
  MPI_Allreduce(&change, &residual, 1, MPI_DOUBLE, MPI_MAX, grid.comm());
  const double energy = grid.energy();
  cairn::ArrayTree tree;
  cairn::ArrayShard u{.dtype = cairn::DType::float64,
                      .global_shape = {o.problem.ny, o.problem.nx},
                      .box = grid.box(),
                      .data = grid.interior(),
                      .strides = grid.interior_strides()};
  tree.add_array("u", std::move(u));
  tree.add_scalar("step", cairn::Scalar(step));
  const auto format = *cairn::storage_format_from_name(o.format);
  const cairn::Composite args{
      {"field", std::make_shared<cairn::ArrayTreeSave>(
                    std::move(tree),
                    cairn::TreeSaveOptions{
                        .format = format,
                        .compression = *cairn_app::compression_from_text(o.compression),
                        .posix = {.aggregation = posix_files(o.posix_files, o.posix_writers)}})},
      {"run", std::make_shared<cairn::JsonSave>(run_info(o, grid, step, comm.size()))}};
  // "saved" is printed by the manager's on_commit callback, once the step is committed.
  const bool saved = mgr.save(
      step, args, {.metrics = {{"residual", residual}, {"energy", energy}}, .force = force});
  costs.started(step, start, saved);
  return saved;
}

// Writes the field as raw row-major float64 with MPI-IO (every rank its block).
void write_output(const std::string& path, const Options& o, const heat2d::Grid& grid) {
  const int sizes[2] = {static_cast<int>(o.problem.ny), static_cast<int>(o.problem.nx)};
  const int subsizes[2] = {static_cast<int>(grid.box().extent[0]),
                           static_cast<int>(grid.box().extent[1])};
  const int starts[2] = {static_cast<int>(grid.box().offset[0]),
                         static_cast<int>(grid.box().offset[1])};
  MPI_Datatype filetype = MPI_DATATYPE_NULL;
  MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_DOUBLE, &filetype);
  MPI_Type_commit(&filetype);
  MPI_File file = MPI_FILE_NULL;
  int rc = MPI_File_open(grid.comm(), path.c_str(), MPI_MODE_CREATE | MPI_MODE_WRONLY,
                         MPI_INFO_NULL, &file);
  if (rc == MPI_SUCCESS) {
    MPI_File_set_size(file, 0);
    MPI_File_set_view(file, 0, MPI_DOUBLE, filetype, "native", MPI_INFO_NULL);
    const std::vector<double> block = grid.block();
    rc = MPI_File_write_all(file, block.data(), static_cast<int>(block.size()), MPI_DOUBLE,
                            MPI_STATUS_IGNORE);
    MPI_File_close(&file);
  }
  MPI_Type_free(&filetype);
  if (rc != MPI_SUCCESS) throw cairn::IoError(path, "writing the field to '" + path + "' failed");
}

int run(const Options& o) {
  const auto run_start = SaveCosts::Clock::now();
  cairn::Comm comm(MPI_COMM_WORLD);
  SaveCosts costs(static_cast<std::uint64_t>(o.problem.nx) *
                  static_cast<std::uint64_t>(o.problem.ny) * sizeof(double));
  heat2d::Grid grid(MPI_COMM_WORLD, o.problem, o.py, o.px);
  if (comm.is_primary()) {
    std::printf(
        "heat2d: %d rank%s as %d x %d, field %lld x %lld, to step %lld, checkpoints in %s (%s)\n",
        comm.size(), comm.size() == 1 ? "" : "s", grid.py(), grid.px(),
        static_cast<long long>(o.problem.ny), static_cast<long long>(o.problem.nx),
        static_cast<long long>(o.steps), o.checkpoint_dir.c_str(), o.format.c_str());
  }
  std::optional<cairn::LocalLevelOptions> local_level;
  if (!o.local_dir.empty()) {
    local_level =
        cairn::LocalLevelOptions{.directory = o.local_dir,
                                 .redundancy = cairn::LocalRedundancy::parse(o.redundancy),
                                 .persistent_every = o.persistent_every,
                                 .drain_at_close = !o.no_final_drain,
                                 .ranks_per_node = o.ranks_per_node};
  }
  cairn::CheckpointManager mgr(
      comm, o.checkpoint_dir,
      {.save_interval_steps = o.save_every,
       .max_to_keep = o.max_to_keep,
       .incremental = o.incremental,
       .preemption = cairn::PreemptionOptions{.margin = std::chrono::seconds(o.margin_seconds)},
       .on_commit =
           [&](std::int64_t saved, const boost::json::object& metrics) {
             const std::string cost = costs.committed(saved);
             if (!comm.is_primary() || o.quiet) return;
             const auto number = [&](const char* key) {
               const auto* v = metrics.if_contains(key);
               return v != nullptr && v->is_number() ? v->to_number<double>() : 0.0;
             };
             std::printf("heat2d: step %lld saved (residual %.6e, energy %.6f; %s)\n",
                         static_cast<long long>(saved), number("residual"), number("energy"),
                         cost.c_str());
           },
       .local_level = local_level},
      {}, {"field", "run"});
  std::int64_t step = restart(mgr, o, grid, comm);
  if (step > o.steps) {
    throw cairn::InvalidArgument("the newest checkpoint is step " + std::to_string(step) +
                                 ", past --steps " + std::to_string(o.steps));
  }
  bool preempted = false;
  while (step < o.steps) {
    ++step;
    const double change = grid.step();
    // The idiom of Orbax: save (the policy saves at a preemption too), then stop once
    // preemption is reached, so that one notice commits exactly one step.
    bool saved = false;
    if (step == o.steps || mgr.should_save(step)) {
      saved = save(mgr, o, grid, comm, step, change, step == o.steps, costs);
    }
    if (mgr.reached_preemption(step)) {
      // A notice that arrived after this step's save decision: save this step still.
      if (!saved) save(mgr, o, grid, comm, step, change, true, costs);
      preempted = true;
      break;
    }
    if (o.step_delay_ms > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(o.step_delay_ms));
  }
  mgr.wait_until_finished();
  if (preempted) {
    if (comm.is_primary()) {
      std::printf("heat2d: preempted: saved step %lld and stopped; run again to continue\n",
                  static_cast<long long>(step));
    }
    return 0;
  }
  if (!o.output.empty()) write_output(o.output, o, grid);
  const double energy = grid.energy();
  if (comm.is_primary()) {
    std::printf("heat2d: finished step %lld, energy %.6f%s%s\n", static_cast<long long>(step),
                energy, o.output.empty() ? "" : ", field written to ", o.output.c_str());
    std::printf("heat2d: checkpointing: %s\n", costs.summary(run_start).c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const cairn_app::MpiSession mpi(argc, argv);
  const int rank = mpi.rank();
  // SIGUSR1 is a notice (Slurm's --signal): the manager's preemption handler serves it while
  // the run computes, and puts this disposition back when it closes, so that a notice that
  // arrives once the run is over does not kill a finished job. SIGTERM keeps its default.
  std::signal(SIGUSR1, SIG_IGN);
  CLI::App app{"2-D heat equation on an MPI process grid, with checkpoint/restart through cairn",
               "heat2d"};
  Options options;
  add_options(app, options);
  int code = 0;
  try {
    app.parse(argc, argv);
    code = run(options);
  } catch (const CLI::ParseError& e) {
    code = rank == 0 ? app.exit(e) : e.get_exit_code();
  } catch (const cairn::Error& e) {
    // cairn throws the same error on every rank of a collective call: one report is enough.
    if (rank == 0) std::fprintf(stderr, "heat2d: %s\n", e.what());
    code = 1;
  } catch (const std::invalid_argument& e) {
    // Bad options are found alike on every rank.
    if (rank == 0) std::fprintf(stderr, "heat2d: %s\n", e.what());
    code = 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "heat2d: rank %d: %s\n", rank, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return code;
}
