#include "support/test_support.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace cairn::testing {

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int world_size() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

SharedTempDir::SharedTempDir() {
  std::string name;
  if (world_rank() == 0) {
    const char* base = std::getenv("CAIRN_TEST_TMPDIR");
    std::string pattern =
        (base ? std::string(base) : std::filesystem::temp_directory_path().string()) +
        "/cairn-test-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (mkdtemp(buffer.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    name = buffer.data();
  }
  int length = static_cast<int>(name.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
  name.resize(static_cast<std::size_t>(length));
  MPI_Bcast(name.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD);
  path_ = name;
}

SharedTempDir::~SharedTempDir() {
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0 && std::getenv("CAIRN_TEST_KEEP") == nullptr) {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
}

}  // namespace cairn::testing
