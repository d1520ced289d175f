// cairn — the command-line tool: list, inspect, verify, compare, convert and clean up cairn
// checkpoints, and drain a dead job's node-local level. Runs on one process, or under mpirun/srun
// where the work is parallel (verify, diff, convert, drain).
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cairn/checkpoint_root.hpp>
#include <cairn/comm.hpp>
#include <cairn/error.hpp>
#include <cairn/levels.hpp>
#include <cairn/log.hpp>
#include <cairn/storage.hpp>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>

#include "commands.hpp"
#include "compression_option.hpp"
#include "format_option.hpp"
#include "mpi_session.hpp"
#include "redundancy_option.hpp"
#include "version.hpp"

namespace {
using namespace cairn_tool;

// What the subcommands were given on the command line.
struct Options {
  cairn_tool::LsOptions ls;
  cairn_tool::InspectOptions inspect;
  cairn_tool::VerifyOptions verify;
  cairn_tool::DiffOptions diff;
  cairn_tool::ConvertOptions convert;
  cairn_tool::GcOptions gc;
  cairn_tool::DrainOptions drain;
  cairn_tool::DumpOptions dump;
};
using Command = std::function<int(const cairn::Comm&, JsonStream&)>;

// Whether the command line asks for JSON output (known before parsing, so that a command
// line CLI11 refuses still gets its JSON error document).
bool wants_json(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--json") return true;
  }
  return false;
}

// The subcommands ls, inspect and dump: read a root or a checkpoint.
void add_reading_commands(CLI::App& app, Options& o, Command& command) {
  auto* ls_cmd = app.add_subcommand("ls",
                                    "List the steps of a checkpoint root: status "
                                    "(committed, incomplete, being deleted), time, size, "
                                    "items, metrics");
  ls_cmd->add_option("ROOT", o.ls.root, "Checkpoint root")->required();
  ls_cmd->add_flag("-l,--long", o.ls.long_listing,
                   "Also each step's data bytes, save time (start of writes to commit) and "
                   "bandwidth, and each array leaf's min, max, NaN and inf counts as saved");
  ls_cmd->add_flag("--json", o.ls.json, "Print JSON instead of a table");
  ls_cmd->callback([&] {
    command = [&](const cairn::Comm& c, JsonStream& json) { return run_ls(c, o.ls, json); };
  });

  auto* inspect_cmd = app.add_subcommand(
      "inspect",
      "Describe a checkpoint: leaf paths, dtypes, global shapes, shard counts, bytes, "
      "formats; JSON items in full");
  inspect_cmd->add_option("CHECKPOINT", o.inspect.checkpoint, "Checkpoint directory")->required();
  inspect_cmd->add_option("ITEM", o.inspect.item,
                          "Only this item, or only the leaves this path or glob pattern "
                          "chooses (as `cairn dump` does: field/u, 'field/*', '*/u')");
  inspect_cmd->add_flag("-D,--decomposition", o.inspect.decomposition,
                        "Also each array leaf's blocks: the rank that wrote each, its offset, "
                        "shape and file (from the index; no data is read)");
  inspect_cmd->add_flag("--json", o.inspect.json, "Print JSON instead of text");
  inspect_cmd->callback([&] {
    command = [&](const cairn::Comm& c, JsonStream& json) {
      return run_inspect(c, o.inspect, json);
    };
  });

  auto* dump_cmd = app.add_subcommand(
      "dump",
      "Print the values of leaves (all when none is named), or their min/max/mean with "
      "--stats; any format, any number of ranks");
  dump_cmd->add_option("CHECKPOINT", o.dump.checkpoint, "Checkpoint directory")->required();
  dump_cmd->add_option("LEAF", o.dump.leaves,
                       "Leaf path as `cairn diff` names it (item/leaf), an item, a group, or a "
                       "glob pattern of them: * and ? within a name, ** across /, [abc] "
                       "(quote it: 'field/*')");
  dump_cmd
      ->add_option("--slice", o.dump.slice,
                   "Part of the array per dimension: start:stop or an index, e.g. 0:10,5 "
                   "(negative counts from the end; missing dimensions are whole)")
      ->check(
          [](const std::string& slice) {
            return slice.find_first_not_of(" \t") == std::string::npos
                       ? std::string(
                             "the slice is empty: give start:stop or an index per "
                             "dimension, e.g. 0:10,5, or leave --slice out")
                       : std::string();
          },
          "SLICE");
  auto* stats =
      dump_cmd->add_flag("--stats", o.dump.stats, "Print min, max and mean instead of the values");
  auto* npy = dump_cmd->add_option(
      "--npy", o.dump.npy,
      "Write the one chosen array leaf (or its --slice) to this NumPy .npy file (np.load "
      "reads it: C order, the slice's shape, the leaf's dtype)");
  auto* raw = dump_cmd->add_option(
      "--raw", o.dump.raw,
      "Write the one chosen array leaf (or its --slice) to this file as raw little-endian "
      "bytes in C order (np.fromfile, MATLAB fread, ParaView's raw reader)");
  // An empty name would read as no file at all: the whole array would go to stdout.
  for (auto* file : {npy, raw}) {
    file->check(
        [](const std::string& name) {
          return name.empty() ? std::string("the file name is empty: name the file to write")
                              : std::string();
        },
        "FILE");
  }
  npy->excludes(raw)->excludes(stats);
  raw->excludes(stats);
  dump_cmd->add_flag("--force", o.dump.force, "Replace an existing --npy or --raw file");
  dump_cmd->add_flag("-q,--quiet", o.dump.quiet, "No progress bar");
  dump_cmd->add_flag("--json", o.dump.json, "Print JSON instead of text");
  dump_cmd->callback([&] {
    command = [&](const cairn::Comm& c, JsonStream& json) { return run_dump(c, o.dump, json); };
  });
}

// The subcommands verify and diff.
void add_checking_commands(CLI::App& app, Options& o, Command& command) {
  auto* verify_cmd = app.add_subcommand(
      "verify",
      "Re-read every shard and check checksums and metadata; exit 1 when anything is "
      "damaged");
  verify_cmd->add_option("TARGET", o.verify.target, "A checkpoint, or a root (every step)")
      ->required();
  verify_cmd->add_flag("-q,--quiet", o.verify.quiet, "Print only problems and the verdict");
  verify_cmd->add_flag("--json", o.verify.json, "Print JSON instead of text");
  verify_cmd->callback([&] {
    command = [&](const cairn::Comm& c, JsonStream& json) { return run_verify(c, o.verify, json); };
  });

  auto* diff_cmd = app.add_subcommand(
      "diff",
      "Compare two checkpoints leaf by leaf (equal, max abs/rel difference, shape or "
      "dtype change); exit 1 when they differ");
  diff_cmd->add_option("A", o.diff.a, "First checkpoint")->required();
  diff_cmd->add_option("B", o.diff.b, "Second checkpoint")->required();
  diff_cmd->add_flag("--brief", o.diff.brief, "Print only what differs");
  diff_cmd->add_flag("-q,--quiet", o.diff.quiet, "As --brief, and no progress bar");
  diff_cmd->add_flag("--json", o.diff.json, "Print JSON instead of text");
  diff_cmd->callback([&] {
    o.diff.brief = o.diff.brief || o.diff.quiet;
    command = [&](const cairn::Comm& c, JsonStream& json) { return run_diff(c, o.diff, json); };
  });
}

// The subcommands convert, gc and drain: write or remove.
void add_writing_commands(CLI::App& app, Options& o, Command& command) {
  auto* convert_cmd = app.add_subcommand(
      "convert",
      "Rewrite a checkpoint with its arrays in another format or compression (parallel under "
      "mpirun)");
  convert_cmd->add_option("SRC", o.convert.source, "Checkpoint to read")->required();
  convert_cmd->add_option("DST", o.convert.destination, "New checkpoint directory")->required();
  convert_cmd->add_option("--format", o.convert.format, "Format of the array leaves")
      ->required()
      ->check(CLI::IsMember(cairn_app::storage_format_names()))
      ->check(cairn_app::available_format());
  convert_cmd
      ->add_option("--compression", o.convert.compression,
                   "Compression of the array leaves: none (the default), zstd or zstd=<level> "
                   "(lossless), zfp=<absolute error> (lossy, float32 and float64 leaves; the "
                   "others are stored as they are)")
      ->check(cairn_app::compression_option());
  convert_cmd->add_flag("--force", o.convert.force, "Replace DST when it exists");
  convert_cmd->add_flag("-q,--quiet", o.convert.quiet, "No progress bar");
  convert_cmd->add_flag("--json", o.convert.json, "Print JSON instead of text");
  convert_cmd->callback([&] {
    command = [&](const cairn::Comm& c, JsonStream& json) {
      return run_convert(c, o.convert, json);
    };
  });

  auto* gc_cmd = app.add_subcommand(
      "gc",
      "Remove what unfinished saves and deletes left in a root (temporary directories, "
      "steps being deleted or moved aside)");
  gc_cmd->add_option("ROOT", o.gc.root, "Checkpoint root")->required();
  gc_cmd->add_flag("-n,--dry-run", o.gc.dry_run, "Only say what would be removed");
  gc_cmd->add_flag("--force", o.gc.force,
                   "Also when a job holds the root's lock (a stale lock never blocks gc)");
  gc_cmd->add_flag("--json", o.gc.json, "Print JSON instead of text");
  gc_cmd->callback([&] {
    command = [&](const cairn::Comm& c, JsonStream& json) { return run_gc(c, o.gc, json); };
  });

  auto* drain_cmd = app.add_subcommand(
      "drain",
      "After a job with a node-local level ended, write the newest step its local level holds "
      "to the root when the root's is older (a job epilogue; run with the job's ranks and ranks "
      "per node, e.g. mpirun -npernode 1 for a job of one rank per node)");
  drain_cmd->add_option("ROOT", o.drain.root, "The job's checkpoint root")->required();
  drain_cmd
      ->add_option("--local-dir", o.drain.local_dir,
                   "The job's node-local directory, {node} in it as the job gave it")
      ->required();
  drain_cmd
      ->add_option("--redundancy", o.drain.redundancy,
                   "The level's redundancy as the job gave it (none, partner[=D], xor[=G]): "
                   "what rebuilds a lost node")
      ->check(cairn_app::redundancy_option())
      ->capture_default_str();
  drain_cmd
      ->add_option("--ranks-per-node", o.drain.ranks_per_node,
                   "Group this many consecutive ranks into one simulated node, as the job did "
                   "(0: the nodes MPI reports, or CAIRN_RANKS_PER_NODE)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  drain_cmd->add_flag("--json", o.drain.json, "Print JSON instead of text");
  drain_cmd->callback([&] {
    command = [&](const cairn::Comm& c, JsonStream& json) { return run_drain(c, o.drain, json); };
  });
}

}  // namespace

int main(int argc, char** argv) {
  const cairn_app::MpiSession mpi(argc, argv);
  const int rank = mpi.rank();
  // The tool reports every problem it finds itself; cairn's own warnings about the same
  // failures (one line per rank) only repeat them. CAIRN_LOG_LEVEL still chooses.
  if (std::getenv("CAIRN_LOG_LEVEL") == nullptr) cairn::set_log_level(cairn::LogLevel::error);

  using namespace cairn_tool;
  CLI::App app{
      "Inspect and maintain cairn checkpoints. Run it directly, or under mpirun for "
      "parallel verify, diff and convert.",
      "cairn"};
  app.require_subcommand(1);
  app.set_version_flag("--version", version_text(), "Print the library and format versions");
  Command command;

  Options options;
  add_reading_commands(app, options, command);
  add_checking_commands(app, options, command);
  add_writing_commands(app, options, command);

  // With --json, stdout carries one JSON document on every outcome: a failure ends it with
  // an "error" member (or is the whole document when nothing was printed yet).
  const bool json_wanted = wants_json(argc, argv);
  JsonStream json;
  json.enable(json_wanted && rank == 0);
  std::string name = "cairn";
  const auto report = [&](std::string_view message) {
    if (rank != 0) return;
    std::fprintf(stderr, "%s: %.*s\n", name.c_str(), static_cast<int>(message.size()),
                 message.data());
    std::fflush(stderr);
    json.fail(name, message, kFailed);
  };
  int code = kOk;
  try {
    app.parse(argc, argv);
    name = "cairn " + app.get_subcommands().front()->get_name();
    cairn::Comm comm(MPI_COMM_WORLD);
    code = command(comm, json);
  } catch (const CLI::ParseError& e) {
    code = e.get_exit_code();
    if (code == 0) {
      if (rank == 0) app.exit(e);  // --help, --version
    } else {
      if (json_wanted) json.fail(name, e.what(), kFailed);
      if (rank == 0) app.exit(e);
      code = kFailed;
    }
  } catch (const CommandError& e) {
    report(e.what());
    code = kFailed;
  } catch (const cairn::Error& e) {
    // cairn throws the same error on every rank of a collective call.
    report(e.what());
    code = kFailed;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cairn: rank %d: %s\n", rank, e.what());
    std::fflush(stderr);
    json.fail(name, e.what(), kFailed);
    std::fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, kFailed);
  }
  std::fflush(stdout);
  return code;
}
