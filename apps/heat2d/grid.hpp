// heat2d — the distributed grid: a 2-D Cartesian decomposition of an ny x nx field, each rank's
// block with a one-cell halo, halo exchange, and the explicit five-point heat-equation update.
//
// The update of a cell reads the same five values in the same order whatever the
// decomposition, so the field after any number of steps is bit-for-bit the same on any
// number of ranks and any process grid.
#pragma once

#include <mpi.h>

#include <cairn/box.hpp>

#include <cstdint>
#include <vector>

namespace heat2d {

/// Largest number of cells along one side of the field: MPI datatypes and MPI-IO count
/// elements in int.
inline constexpr std::int64_t kMaxSide = 2147483647;

/// Global problem size and physics.
struct Problem {
  std::int64_t nx = 0;  ///< columns
  std::int64_t ny = 0;  ///< rows
  double alpha = 0.2;   ///< diffusion number dt * kappa / h^2 (stable for alpha <= 0.25)
};

/// The value of cell (i, j) at step 0 (boundary cells keep it forever): a hot edge and two
/// warm squares on a cold plate.
[[nodiscard]] double initial_value(const Problem& problem, std::int64_t i, std::int64_t j);

/// One rank's block of the field in a Cartesian process grid, with a one-cell halo.
class Grid {
 public:
  /// Builds the Cartesian communicator over `comm` (dims from MPI_Dims_create, or `py` x `px`
  /// when both are positive) and this rank's block, filled with the initial values.
  /// Collective over `comm`. Throws std::invalid_argument for a grid that does not match the
  /// number of ranks or is larger than the field, and for a field whose largest block needs
  /// more memory than the machine has (checked before allocating, alike on every rank).
  Grid(MPI_Comm comm, const Problem& problem, int py, int px);
  ~Grid();
  Grid(const Grid&) = delete;
  Grid& operator=(const Grid&) = delete;

  /// Advances the field by one step (halo exchange, then the stencil on interior cells).
  /// Returns this rank's largest absolute change of a cell. Collective.
  double step();

  /// Sum of the field as an exact fixed-point number (units of 2^-32), so that it does not
  /// depend on the decomposition. Collective.
  [[nodiscard]] double energy() const;

  /// This rank's box of the global field (rows, columns).
  [[nodiscard]] const cairn::Box& box() const noexcept { return box_; }
  /// Process grid extents (rows of ranks, columns of ranks).
  [[nodiscard]] int py() const noexcept { return dims_[0]; }
  [[nodiscard]] int px() const noexcept { return dims_[1]; }
  /// The Cartesian communicator.
  [[nodiscard]] MPI_Comm comm() const noexcept { return cart_; }

  /// First interior cell of the local buffer and the element strides of the block within it
  /// (row stride, 1): a strided view for saving.
  [[nodiscard]] double* interior() noexcept { return &u_[static_cast<std::size_t>(width_ + 1)]; }
  [[nodiscard]] std::vector<std::int64_t> interior_strides() const { return {width_, 1}; }

  /// Copies a contiguous row-major block (this rank's box) into the interior.
  void load(const std::vector<double>& block);
  /// The interior as a contiguous row-major block.
  [[nodiscard]] std::vector<double> block() const;

 private:
  void exchange_halo();
  [[nodiscard]] std::size_t at(std::int64_t r, std::int64_t c) const noexcept {
    return static_cast<std::size_t>(r * width_ + c);
  }

  Problem problem_;
  MPI_Comm cart_ = MPI_COMM_NULL;
  MPI_Datatype column_ = MPI_DATATYPE_NULL;
  int dims_[2] = {0, 0};
  int up_ = MPI_PROC_NULL, down_ = MPI_PROC_NULL, left_ = MPI_PROC_NULL, right_ = MPI_PROC_NULL;
  cairn::Box box_;
  std::int64_t rows_ = 0, cols_ = 0, width_ = 0;  // block extents; width_ = cols_ + 2
  std::vector<double> u_, next_;
};

}  // namespace heat2d
