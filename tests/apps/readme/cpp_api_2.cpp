// docs/cpp-api.md's C++ block 2: an AsyncCheckpointer saving a composite (an array tree and JSON)
// and restoring it. The harness checks the restored tree and removes the checkpoint, so that a
// second run saves it again.
#include "readme_harness.hpp"

int main(int argc, char** argv) {
  return readme::run(argc, argv, [] {
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const std::int64_t n = 1000;
    const cairn::Box mine{{readme::part_first(n, rank, size)}, {readme::part_count(n, rank, size)}};
    std::vector<double> u(static_cast<std::size_t>(mine.extent[0]), 3.5);
    cairn::ArrayTree state;
    state.add_array("u", cairn::ArrayShard::host(u.data(), {n}, mine));
    const boost::json::value info = {{"dt", 0.25}};

#include "cpp_api_2.inc"

    const auto& saved = tree.find("u")->as_array();
    const auto* values = static_cast<const double*>(saved.data);
    for (std::int64_t i = 0; i < saved.box.extent[0]; ++i) {
      readme::check(values[i] == 3.5, "the restored u differs from the saved one");
    }
    readme::check(restored.contains("info"), "the info item was not restored");
    comm.barrier("block 2 checked");
    if (comm.is_primary()) std::filesystem::remove_all("run");
  });
}
