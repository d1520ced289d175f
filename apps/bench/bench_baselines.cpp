// What a C user would write without cairn, and the memcpy limit of async copies.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "bench_common.hpp"

namespace bench {
namespace {

[[noreturn]] void fail(const std::string& what, const std::filesystem::path& path) {
  throw std::runtime_error(what + " " + path.string() + ": " + std::strerror(errno));
}

void check_mpi(int code, const std::string& what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw std::runtime_error(what + ": " + std::string(text, static_cast<std::size_t>(length)));
}

std::int64_t bytes_of(const std::vector<double>& v) {
  return static_cast<std::int64_t>(v.size() * sizeof(double));
}

// Fails on every rank when any rank's restored data differs from what was written.
void verify(const std::string& name, const std::vector<std::vector<double>>& written,
            const std::vector<std::vector<double>>& read) {
  int bad = written == read ? 0 : 1;
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (bad) throw std::runtime_error(name + ": data read back differs from the data written");
}

}  // namespace

void run_memcpy(const Run& run) {
  const auto source = local_blocks(run.shape);
  auto target = empty_like(source);
  for (int rep = 0; rep < run.reps; ++rep) {
    const double seconds = timed([&] {
      for (std::size_t k = 0; k < source.size(); ++k) {
        std::memcpy(target[k].data(), source[k].data(), source[k].size() * sizeof(double));
      }
    });
    run.recorder->add("memcpy.copy", rep, seconds, run.shape.total_bytes(),
                      {{"ranks", world_size()}});
  }
}

void run_posix_baseline(const Run& run) {
  const auto blocks = local_blocks(run.shape);
  auto back = empty_like(blocks);
  const auto dir = run.dir / "posix-baseline";
  char name[32];
  std::snprintf(name, sizeof name, "p%d.bin", world_rank());
  const auto file = dir / name;
  for (int rep = 0; rep < run.reps; ++rep) {
    remove_tree(dir);
    if (world_rank() == 0) std::filesystem::create_directories(dir);
    drop_caches(run.drop);
    const double write_seconds = timed([&] {
      const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0) fail("open", file);
      for (const auto& block : blocks) {
        const char* p = reinterpret_cast<const char*>(block.data());
        std::int64_t left = bytes_of(block);
        while (left > 0) {
          const ssize_t n = ::write(fd, p, static_cast<std::size_t>(left));
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) fail("write", file);
          p += n;
          left -= n;
        }
      }
      if (::fsync(fd) != 0) fail("fsync", file);
      if (::close(fd) != 0) fail("close", file);
    });
    run.recorder->add("baseline.posix.write", rep, write_seconds, run.shape.total_bytes());

    const std::string dropped = drop_caches(run.drop);
    const double read_seconds = timed([&] {
      const int fd = ::open(file.c_str(), O_RDONLY);
      if (fd < 0) fail("open", file);
      for (auto& block : back) {
        char* p = reinterpret_cast<char*>(block.data());
        std::int64_t left = bytes_of(block);
        while (left > 0) {
          const ssize_t n = ::read(fd, p, static_cast<std::size_t>(left));
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) fail("read", file);
          p += n;
          left -= n;
        }
      }
      ::close(fd);
    });
    if (rep == 0) verify("baseline.posix", blocks, back);
    run.recorder->add("baseline.posix.read", rep, read_seconds, run.shape.total_bytes(),
                      {{"page_cache", dropped}});
  }
  remove_tree(dir);
}

void run_mpiio_baseline(const Run& run) {
  const auto blocks = local_blocks(run.shape);
  auto back = empty_like(blocks);
  const int rank = world_rank();
  const int size = world_size();
  // File layout: leaf after leaf; within a leaf, each rank's block after the lower ranks'.
  std::int64_t my_offset = 0;
  for (int r = 0; r < rank; ++r) {
    const cairn::Box box = block_of(run.shape, r, size);
    my_offset += box.extent[0] * box.extent[1] * 8;
  }
  const std::int64_t leaf_bytes = run.shape.rows * run.shape.cols * 8;
  const auto dir = run.dir / "mpiio-baseline";
  const auto file = dir / "data.bin";
  for (const auto& block : blocks) {
    if (block.size() > static_cast<std::size_t>(INT_MAX)) {
      throw std::runtime_error("mpiio baseline: a block exceeds INT_MAX elements");
    }
  }
  for (int rep = 0; rep < run.reps; ++rep) {
    remove_tree(dir);
    if (rank == 0) std::filesystem::create_directories(dir);
    drop_caches(run.drop);
    const double write_seconds = timed([&] {
      MPI_File fh = MPI_FILE_NULL;
      check_mpi(MPI_File_open(MPI_COMM_WORLD, file.c_str(), MPI_MODE_CREATE | MPI_MODE_WRONLY,
                              MPI_INFO_NULL, &fh),
                "MPI_File_open " + file.string());
      for (std::size_t leaf = 0; leaf < blocks.size(); ++leaf) {
        check_mpi(MPI_File_write_at_all(fh, static_cast<MPI_Offset>(leaf) * leaf_bytes + my_offset,
                                        blocks[leaf].data(), static_cast<int>(blocks[leaf].size()),
                                        MPI_DOUBLE, MPI_STATUS_IGNORE),
                  "MPI_File_write_at_all " + file.string());
      }
      check_mpi(MPI_File_sync(fh), "MPI_File_sync " + file.string());
      check_mpi(MPI_File_close(&fh), "MPI_File_close " + file.string());
    });
    run.recorder->add("baseline.mpiio.write", rep, write_seconds, run.shape.total_bytes());

    const std::string dropped = drop_caches(run.drop);
    const double read_seconds = timed([&] {
      MPI_File fh = MPI_FILE_NULL;
      check_mpi(MPI_File_open(MPI_COMM_WORLD, file.c_str(), MPI_MODE_RDONLY, MPI_INFO_NULL, &fh),
                "MPI_File_open " + file.string());
      for (std::size_t leaf = 0; leaf < back.size(); ++leaf) {
        check_mpi(MPI_File_read_at_all(fh, static_cast<MPI_Offset>(leaf) * leaf_bytes + my_offset,
                                       back[leaf].data(), static_cast<int>(back[leaf].size()),
                                       MPI_DOUBLE, MPI_STATUS_IGNORE),
                  "MPI_File_read_at_all " + file.string());
      }
      check_mpi(MPI_File_close(&fh), "MPI_File_close " + file.string());
    });
    if (rep == 0) verify("baseline.mpiio", blocks, back);
    run.recorder->add("baseline.mpiio.read", rep, read_seconds, run.shape.total_bytes(),
                      {{"page_cache", dropped}});
  }
  remove_tree(dir);
}

}  // namespace bench
