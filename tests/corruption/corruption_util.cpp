#include "corruption_util.hpp"

#include <cairn/checkpointer.hpp>
#include <cairn/config.hpp>
#include <cairn/handlers.hpp>
#include <cairn/manager.hpp>
#include <cairn/storage.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <boost/json.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <sstream>
#include <string_view>

#include "storage/stream/checksum.hpp"

extern char** environ;

namespace cairn::testing {
namespace {

constexpr std::int64_t kCols = 48;

std::vector<double> row(std::int64_t step, int rank, double shift) {
  std::vector<double> out(kCols);
  for (std::int64_t i = 0; i < kCols; ++i) {
    out[static_cast<std::size_t>(i)] =
        static_cast<double>(step) * 1000.0 + rank * 100.0 + static_cast<double>(i) + shift;
  }
  return out;
}

std::vector<std::byte> blob(std::int64_t step, int rank) {
  std::vector<std::byte> out(100 + static_cast<std::size_t>(rank));
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<std::byte>((static_cast<std::size_t>(step) * 31 + i * 7 + rank) & 0xff);
  }
  return out;
}

double time_of(std::int64_t step) { return 0.25 * static_cast<double>(step); }

struct Buffers {
  std::vector<double> u, v;
  ArrayTree tree(const Comm& comm, double time = 0.0) {
    const Box mine{{comm.rank(), 0}, {1, kCols}};
    ArrayTree t;
    t.add_array("fields/u", ArrayShard::host(u.data(), {comm.size(), kCols}, mine));
#if CAIRN_HAVE_HDF5
    t.add_array("fields/v", ArrayShard::host(v.data(), {comm.size(), kCols}, mine));
#endif
    t.add_scalar("time", Scalar(time));
    return t;
  }
};

bool tree_equal(const Comm& comm, const ArrayTree& tree, const Buffers& b, std::int64_t step) {
  bool ok = b.u == row(step, comm.rank(), 0.0);
#if CAIRN_HAVE_HDF5
  ok = ok && b.v == row(step, comm.rank(), 0.5);
#endif
  const Leaf* time = tree.find("time");
  return ok && time != nullptr && time->as_scalar().as<double>() == time_of(step);
}

template <class F>
Outcome run(F&& restore) {
  Outcome out;
  try {
    out.data_equal = restore();
  } catch (const Error& e) {
    out.threw = true;
    out.message = e.what();
  } catch (const std::exception& e) {
    out.threw = true;
    out.cairn_error = false;
    out.message = e.what();
  }
  return out;
}

void barrier(const Comm& comm) { MPI_Barrier(comm.get()); }

std::vector<char> read_all(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string read_text(const std::filesystem::path& file) {
  const auto bytes = read_all(file);
  return {bytes.begin(), bytes.end()};
}

// Variables by which mpiexec (Open MPI, MPICH/Hydra, Intel MPI) tells a process that it is a
// rank of the job; a child that saw them would try to join the job instead of starting its own.
bool launcher_variable(std::string_view entry) {
  if (entry.starts_with("OMPI_ALLOW_RUN_AS_ROOT")) return false;  // user settings, not the job
  for (const std::string_view prefix :
       {"OMPI_", "PMIX_", "PMI_", "OPAL_", "ORTE_", "PRTE_", "HYDRA_", "HYDI_", "MPIR_",
        "MPI_LOCALNRANKS=", "MPI_LOCALRANKID=", "I_MPI_HYDRA_", "I_MPI_PMI"}) {
    if (entry.starts_with(prefix)) return true;
  }
  return false;
}

// Runs the program on the calling process: the result, or an exit code of -1 and why.
ToolRun spawn_and_wait(const std::filesystem::path& program, const std::vector<std::string>& args,
                       const std::filesystem::path& out_file,
                       const std::filesystem::path& err_file) {
  std::vector<std::string> strings{program.string()};
  strings.insert(strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (char** e = environ; *e != nullptr; ++e) {
    if (!launcher_variable(*e)) envp.push_back(*e);
  }
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ToolRun run;
  if (rc != 0) {
    run.err = "cannot start '" + program.string() + "': " + std::strerror(rc);
    return run;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      run.err = std::string("waitpid failed: ") + std::strerror(errno);
      return run;
    }
  }
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.out = read_text(out_file);
  run.err = read_text(err_file);
  return run;
}

void write_all(const std::filesystem::path& file, const std::vector<char>& bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

std::vector<StepFile> step_files(int ranks) {
  std::vector<StepFile> files = {{"COMMITTED"},
                                 {"cairn-step.json"},
                                 {"state/cairn-tree.json"},
                                 {"state/cairn-tree.bin"},
                                 {"info/value.json"},
                                 {"blob/cairn-bytes.json"}};
  for (int r = 0; r < ranks; ++r) {
    files.push_back({"state/shards/p" + std::to_string(r) + ".bin", "fields/u"});
    files.push_back({"blob/p" + std::to_string(r) + ".bin"});
  }
#if CAIRN_HAVE_HDF5
  files.push_back({"state/data.h5", "fields/v"});
#endif
  return files;
}

void save_two_steps(const Comm& comm, const std::filesystem::path& root) {
  CheckpointManager manager(comm, root, {.enable_async = false});
  for (std::int64_t step : {1, 2}) {
    Buffers b{row(step, comm.rank(), 0.0), row(step, comm.rank(), 0.5)};
    ArrayTree tree = b.tree(comm, time_of(step));
    TreeSaveOptions options;
#if CAIRN_HAVE_HDF5
    options.leaf_formats["fields/v"] = StorageFormat::hdf5;
#endif
    const Composite items{
        {"state", std::make_shared<ArrayTreeSave>(std::move(tree), options)},
        {"info", std::make_shared<JsonSave>(boost::json::value{{"step", step}, {"name", "run"}})},
        {"blob", std::make_shared<BytesSave>(blob(step, comm.rank()))}};
    (void)manager.save(step, items, {.force = true});
  }
  manager.close();
}

Outcome restore_with_manager(const Comm& comm, const std::filesystem::path& root,
                             std::int64_t step) {
  return run([&] {
    CheckpointManager manager(comm, root, {.read_only = true});
    Buffers b{std::vector<double>(kCols, -1.0), std::vector<double>(kCols, -1.0)};
    const Composite args{{"state", std::make_shared<ArrayTreeRestore>(b.tree(comm))},
                         {"info", std::make_shared<JsonRestore>()},
                         {"blob", std::make_shared<BytesRestore>()}};
    const auto result = Checkpointer::result_as<CompositeResult>(manager.restore(step, &args));
    const auto& tree = result.get<ArrayTree>("state");
    const auto& info = result.get<boost::json::value>("info");
    const auto& bytes = result.get<std::vector<std::byte>>("blob");
    return tree_equal(comm, tree, b, step) &&
           info == boost::json::value{{"step", step}, {"name", "run"}} &&
           bytes == blob(step, comm.rank());
  });
}

Outcome restore_state_tree(const Comm& comm, const std::filesystem::path& root, std::int64_t step) {
  return run([&] {
    Buffers b{std::vector<double>(kCols, -1.0), std::vector<double>(kCols, -1.0)};
    ArrayTree tree = b.tree(comm);
    restore_tree(comm, root / std::to_string(step) / "state", tree);
    return tree_equal(comm, tree, b, step);
  });
}

void flip_bytes(const Comm& comm, const std::filesystem::path& file, std::uint64_t seed, int count,
                std::uint64_t begin, std::uint64_t end) {
  if (comm.is_primary()) {
    auto bytes = read_all(file);
    if (end == 0 || end > bytes.size()) end = bytes.size();
    std::mt19937_64 random(seed);
    for (int i = 0; i < count && begin < end; ++i) {
      const auto at = begin + random() % (end - begin);
      // XOR with a non-zero value: the byte always changes.
      bytes[at] = static_cast<char>(bytes[at] ^ static_cast<char>(1 + random() % 255));
    }
    write_all(file, bytes);
  }
  barrier(comm);
}

void truncate_file(const Comm& comm, const std::filesystem::path& file, std::uint64_t size) {
  if (comm.is_primary()) std::filesystem::resize_file(file, size);
  barrier(comm);
}

void delete_file(const Comm& comm, const std::filesystem::path& file) {
  if (comm.is_primary()) std::filesystem::remove(file);
  barrier(comm);
}

void write_marker(const Comm& comm, const std::filesystem::path& dir,
                  const std::vector<std::string>& files) {
  if (comm.is_primary()) {
    std::vector<std::string> sorted = files;
    std::sort(sorted.begin(), sorted.end());
    std::string text = "cairn checkpoint committed 2026-01-01T00:00:00Z\n";
    for (const auto& file : sorted) {
      std::uint64_t sum = 0;
      std::error_code ec;
      if (std::filesystem::is_regular_file(dir / file, ec)) {
        const auto bytes = read_all(dir / file);
        sum = cairn::storage::checksum_of(std::as_bytes(std::span(bytes.data(), bytes.size())));
      }
      text += "xxh3 " + cairn::storage::checksum_to_hex(sum) + " " + file + "\n";
    }
    text += "end\n";
    std::ofstream(dir / kCommitMarker, std::ios::binary | std::ios::trunc) << text;
  }
  barrier(comm);
}

std::vector<std::string> marker_files(const std::filesystem::path& dir) {
  std::vector<std::string> files;
  std::ifstream in(dir / kCommitMarker);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("xxh3 ") && line.size() > 22) files.push_back(line.substr(22));
  }
  return files;
}

void swap_files(const Comm& comm, const std::filesystem::path& a, const std::filesystem::path& b) {
  if (comm.is_primary()) {
    const auto bytes_a = read_all(a);
    write_all(a, read_all(b));
    write_all(b, bytes_a);
  }
  barrier(comm);
}

void copy_tree(const Comm& comm, const std::filesystem::path& from,
               const std::filesystem::path& to) {
  if (comm.is_primary()) {
    std::filesystem::remove_all(to);
    std::filesystem::copy(from, to, std::filesystem::copy_options::recursive);
  }
  barrier(comm);
}

std::optional<std::pair<std::uint64_t, std::uint64_t>> find_bytes(
    const Comm& comm, const std::filesystem::path& file, const std::vector<std::byte>& pattern) {
  const auto bytes = read_all(file);
  barrier(comm);  // nobody damages the file before every rank has read it
  const auto* first = reinterpret_cast<const char*>(pattern.data());
  const auto it = std::search(bytes.begin(), bytes.end(), first, first + pattern.size());
  if (it == bytes.end()) return std::nullopt;
  const auto at = static_cast<std::uint64_t>(it - bytes.begin());
  return std::pair{at, at + pattern.size()};
}

std::vector<std::byte> v_row_bytes(std::int64_t step, int rank) {
  const auto values = row(step, rank, 0.5);
  std::vector<std::byte> out(values.size() * sizeof(double));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

std::filesystem::path cairn_tool() {
  const char* tool = std::getenv("CAIRN_TOOL");
  return tool != nullptr ? std::filesystem::path(tool) : std::filesystem::path();
}

ToolRun run_program(const Comm& comm, const std::filesystem::path& program,
                    const std::vector<std::string>& args, const std::filesystem::path& scratch) {
  ToolRun run;
  if (comm.is_primary()) {
    run = spawn_and_wait(program, args, scratch / "program.out", scratch / "program.err");
  }
  // As bytes, not JSON: what the program prints about damaged files need not be UTF-8.
  run.exit_code = std::stoi(comm.broadcast(std::to_string(run.exit_code)));
  run.out = comm.broadcast(run.out);
  run.err = comm.broadcast(run.err);
  return run;
}

std::map<std::string, VerifyVerdict> parse_verify_output(const std::string& out) {
  constexpr std::string_view kDamaged = ": DAMAGED";
  constexpr std::string_view kOk = ": OK (";
  std::map<std::string, VerifyVerdict> verdicts;
  VerifyVerdict* current = nullptr;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with(" ") && line.ends_with(kDamaged)) {
      current = &verdicts[line.substr(0, line.size() - kDamaged.size())];
      current->damaged = true;
    } else if (const auto ok = line.find(kOk); !line.starts_with(" ") && ok != std::string::npos) {
      current = &verdicts[line.substr(0, ok)];
    } else if (current != nullptr && line.starts_with("  - ")) {
      current->problems.push_back(line.substr(4));
    } else if (current != nullptr && current->damaged && !current->problems.empty() &&
               !line.ends_with(" damaged")) {
      current->problems.back() += "\n" + line;  // a message of several lines
    } else {
      current = nullptr;
    }
  }
  return verdicts;
}

}  // namespace cairn::testing
