// cairn_bench: the MPI side of the benchmark suite (scripts/bench.sh runs it).
//
// Writes the same tree of float64 arrays (2-D blocks on a near-square process grid) with
// cairn and with hand-written baselines, reads it back after dropping the page cache, and
// appends one JSON line per measurement to --out:
//   {"name": "cairn.posix.save_sync", "rep": 0, "seconds": 1.9, "bytes": 2147483648, ...}
//
//   mpiexec -n 4 cairn_bench --dir /scratch --rows 8192 --cols 4096 --leaves 8 --out r.jsonl
//   mpiexec -n 2 cairn_bench --dir /scratch --cases soak --soak-saves 2000 --out soak.jsonl
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <sstream>

#include "bench_common.hpp"
#include "mpi_session.hpp"

namespace {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

void run_case(const bench::Run& run, const bench::Soak& soak, const std::string& name) {
  if (name == "soak") {
    bench::run_soak(run, soak);
  } else if (name == "memcpy") {
    bench::run_memcpy(run);
  } else if (name == "posix-baseline") {
    bench::run_posix_baseline(run);
  } else if (name == "mpiio-baseline") {
    bench::run_mpiio_baseline(run);
  } else if (name == "cairn-posix" || name == "cairn-hdf5") {
    bench::run_cairn(run, name.substr(6));
  } else if (name == "cairn-async-posix" || name == "cairn-async-hdf5") {
    bench::run_cairn_async_only(run, name.substr(12));
  } else if (name == "cairn-meta-posix" || name == "cairn-meta-hdf5") {
    bench::run_cairn_meta(run, name.substr(11));
  } else if (name == "cairn-compress-posix" || name == "cairn-compress-hdf5") {
    bench::run_cairn_compress(run, name.substr(15));
  } else if (name == "cairn-incremental-posix") {
    bench::run_cairn_incremental(run);
  } else if (name == "cairn-levels") {
    bench::run_cairn_levels(run);
  } else if (name == "cairn-scaling-posix" || name == "cairn-scaling-hdf5") {
    bench::run_cairn_scaling(run, name.substr(14));
  } else {
    throw std::runtime_error("unknown case '" + name + "'");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const cairn_app::MpiSession mpi(argc, argv);
  const int rank = mpi.rank();

  CLI::App app("cairn benchmark driver (collective: run under mpiexec)");
  bench::Run run;
  std::string out;
  std::string cases =
      "memcpy,posix-baseline,mpiio-baseline,cairn-posix,cairn-hdf5,cairn-meta-posix,"
      "cairn-meta-hdf5,cairn-compress-posix,cairn-compress-hdf5,cairn-incremental-posix,"
      "cairn-levels";
  bool no_drop = false;
  bench::Soak soak;
  app.add_option("--dir", run.dir, "Scratch directory (on the file system to measure)")->required();
  app.add_option("--out", out, "JSON-lines file the results are appended to")->required();
  app.add_option("--rows", run.shape.rows, "Rows of each large array");
  app.add_option("--cols", run.shape.cols, "Columns of each large array");
  app.add_option("--leaves", run.shape.leaves, "Number of large arrays");
  app.add_option("--meta-leaves", run.shape.meta_leaves, "Leaves of the metadata-heavy tree");
  app.add_option("--meta-elems", run.shape.meta_elems, "float64 elements per small leaf");
  app.add_option("--reps", run.reps, "Repetitions of each measurement");
  app.add_option("--io-buffer", run.io_buffer_bytes, "cairn's io_buffer_bytes");
  std::string posix_files = "per-rank";
  std::string posix_writers = "every-rank";
  app.add_option("--posix-files", posix_files,
                 "cairn's posix shard files: per-rank, per-node or a number of groups")
      ->check(CLI::IsMember({"per-rank", "per-node"}) | CLI::PositiveNumber);
  app.add_option("--posix-writers", posix_writers,
                 "Who writes a group's posix file: every-rank or aggregator (shipping)")
      ->check(CLI::IsMember({"every-rank", "aggregator"}));
  app.add_option("--cases", cases, "Comma-separated cases to run");
  app.add_flag("--no-drop-caches", no_drop, "Do not drop the page cache before reads");
  app.add_option("--soak-saves", soak.saves, "Async saves of the soak case (--cases soak)");
  app.add_option("--soak-keep", soak.keep, "max_to_keep of the soak case");
  app.add_option("--soak-samples", soak.samples, "Samples of the soak case's counters");
  app.add_flag("--soak-background-delete", soak.background_delete,
               "The soak's manager deletes steps on a background thread");
  int code = 0;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    code = rank == 0 ? app.exit(e) : 1;
    return code;
  }
  run.drop = !no_drop;
  using Kind = cairn::PosixAggregation::Kind;
  run.posix_aggregation = {
      .kind = posix_files == "per-rank"   ? Kind::per_rank
              : posix_files == "per-node" ? Kind::per_node
                                          : Kind::count,
      .count = posix_files == "per-rank" || posix_files == "per-node" ? 0 : std::stoi(posix_files),
      .writers = posix_writers == "aggregator" ? cairn::PosixAggregation::Writers::aggregator
                                               : cairn::PosixAggregation::Writers::every_rank};
  run.posix_files = posix_files == "per-rank" ? posix_files : posix_files + "/" + posix_writers;
  bench::Recorder recorder(out);
  run.recorder = &recorder;
  try {
    for (const std::string& name : split_list(cases)) {
      if (rank == 0) {
        std::printf("cairn_bench: %s\n", name.c_str());
        std::fflush(stdout);
      }
      run_case(run, soak, name);
      recorder.flush();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cairn_bench (rank %d): %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return code;
}
