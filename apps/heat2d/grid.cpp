#include "grid.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace heat2d {
namespace {

// Rows [first, first + count) of `n` for part `part` of `parts`, as even as possible.
std::pair<std::int64_t, std::int64_t> split(std::int64_t n, int part, int parts) {
  const std::int64_t first = n * part / parts;
  return {first, n * (part + 1) / parts - first};
}

void check(int code, const char* what) {
  if (code != MPI_SUCCESS) throw std::runtime_error(std::string("MPI call failed: ") + what);
}

// Refuses a field whose largest block (with its halo, twice: the field and the next step)
// needs more memory than this machine has, before anything is allocated. The largest block is
// the same on every rank, so every rank refuses alike.
void check_memory(const Problem& problem, int py, int px) {
  const auto largest = [](std::int64_t n, int parts) { return (n + parts - 1) / parts; };
  const double cells = static_cast<double>(largest(problem.ny, py) + 2) *
                       static_cast<double>(largest(problem.nx, px) + 2);
  const double needed = 2.0 * cells * static_cast<double>(sizeof(double));
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return;  // unknown: let the allocation decide
  const double memory = static_cast<double>(pages) * static_cast<double>(page_size);
  if (needed <= memory) return;
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  char text[512];
  std::snprintf(text, sizeof text,
                "a field of %lld x %lld cells on a %d x %d process grid needs %.3g GiB on each "
                "rank, more than the %.1f GiB of memory of this machine: use a smaller --nx/--ny "
                "or more ranks",
                static_cast<long long>(problem.ny), static_cast<long long>(problem.nx), py, px,
                needed / kGiB, memory / kGiB);
  throw std::invalid_argument(text);
}

}  // namespace

double initial_value(const Problem& problem, std::int64_t i, std::int64_t j) {
  if (i == 0) return 1.0;  // the hot edge
  const auto in = [&](double y0, double y1, double x0, double x1) {
    const double y = static_cast<double>(i) / static_cast<double>(problem.ny);
    const double x = static_cast<double>(j) / static_cast<double>(problem.nx);
    return y >= y0 && y < y1 && x >= x0 && x < x1;
  };
  if (in(0.30, 0.45, 0.20, 0.35)) return 0.8;
  if (in(0.60, 0.80, 0.55, 0.85)) return 0.5;
  return 0.0;
}

Grid::Grid(MPI_Comm comm, const Problem& problem, int py, int px) : problem_(problem) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  if ((py > 0) != (px > 0)) throw std::invalid_argument("give both --py and --px, or neither");
  if (py > 0) {
    if (py * px != size) {
      throw std::invalid_argument("the process grid " + std::to_string(py) + " x " +
                                  std::to_string(px) + " does not have " + std::to_string(size) +
                                  " ranks");
    }
    dims_[0] = py;
    dims_[1] = px;
  }
  check(MPI_Dims_create(size, 2, dims_), "MPI_Dims_create");
  if (dims_[0] > problem.ny || dims_[1] > problem.nx) {
    throw std::invalid_argument("the process grid " + std::to_string(dims_[0]) + " x " +
                                std::to_string(dims_[1]) + " is larger than the field");
  }
  check_memory(problem, dims_[0], dims_[1]);
  const int periods[2] = {0, 0};
  check(MPI_Cart_create(comm, 2, dims_, periods, 0, &cart_), "MPI_Cart_create");
  int rank = 0;
  int coords[2] = {0, 0};
  MPI_Comm_rank(cart_, &rank);
  MPI_Cart_coords(cart_, rank, 2, coords);
  MPI_Cart_shift(cart_, 0, 1, &up_, &down_);
  MPI_Cart_shift(cart_, 1, 1, &left_, &right_);

  const auto [r0, rn] = split(problem.ny, coords[0], dims_[0]);
  const auto [c0, cn] = split(problem.nx, coords[1], dims_[1]);
  box_ = cairn::Box{{r0, c0}, {rn, cn}};
  rows_ = rn;
  cols_ = cn;
  width_ = cn + 2;
  u_.assign(static_cast<std::size_t>((rn + 2) * width_), 0.0);
  for (std::int64_t r = 0; r < rn; ++r) {
    for (std::int64_t c = 0; c < cn; ++c)
      u_[at(r + 1, c + 1)] = initial_value(problem, r0 + r, c0 + c);
  }
  next_ = u_;
  check(MPI_Type_vector(static_cast<int>(rn), 1, static_cast<int>(width_), MPI_DOUBLE, &column_),
        "MPI_Type_vector");
  MPI_Type_commit(&column_);
}

Grid::~Grid() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (column_ != MPI_DATATYPE_NULL) MPI_Type_free(&column_);
  if (cart_ != MPI_COMM_NULL) MPI_Comm_free(&cart_);
}

void Grid::exchange_halo() {
  const int w = static_cast<int>(cols_);
  double* u = u_.data();
  // Rows: send my first row up and receive my bottom halo from below, and the reverse.
  check(MPI_Sendrecv(u + at(1, 1), w, MPI_DOUBLE, up_, 0, u + at(rows_ + 1, 1), w, MPI_DOUBLE,
                     down_, 0, cart_, MPI_STATUS_IGNORE),
        "MPI_Sendrecv (rows up)");
  check(MPI_Sendrecv(u + at(rows_, 1), w, MPI_DOUBLE, down_, 1, u + at(0, 1), w, MPI_DOUBLE, up_, 1,
                     cart_, MPI_STATUS_IGNORE),
        "MPI_Sendrecv (rows down)");
  // Columns (the five-point stencil needs no corners).
  check(MPI_Sendrecv(u + at(1, 1), 1, column_, left_, 2, u + at(1, cols_ + 1), 1, column_, right_,
                     2, cart_, MPI_STATUS_IGNORE),
        "MPI_Sendrecv (columns left)");
  check(MPI_Sendrecv(u + at(1, cols_), 1, column_, right_, 3, u + at(1, 0), 1, column_, left_, 3,
                     cart_, MPI_STATUS_IGNORE),
        "MPI_Sendrecv (columns right)");
}

double Grid::step() {
  exchange_halo();
  const double a = problem_.alpha;
  double change = 0.0;
  for (std::int64_t r = 1; r <= rows_; ++r) {
    const std::int64_t i = box_.offset[0] + r - 1;
    const bool edge_row = i == 0 || i == problem_.ny - 1;
    for (std::int64_t c = 1; c <= cols_; ++c) {
      const std::int64_t j = box_.offset[1] + c - 1;
      const double old = u_[at(r, c)];
      if (edge_row || j == 0 || j == problem_.nx - 1) {
        next_[at(r, c)] = old;  // fixed (Dirichlet) boundary
        continue;
      }
      // The same operands in the same order on every decomposition.
      const double laplacian =
          ((u_[at(r - 1, c)] + u_[at(r + 1, c)]) + (u_[at(r, c - 1)] + u_[at(r, c + 1)])) -
          4.0 * old;
      const double value = old + a * laplacian;
      next_[at(r, c)] = value;
      change = std::max(change, std::abs(value - old));
    }
  }
  std::swap(u_, next_);
  return change;
}

double Grid::energy() const {
  constexpr double kScale = 4294967296.0;  // 2^32
  std::int64_t local = 0;
  for (std::int64_t r = 1; r <= rows_; ++r) {
    for (std::int64_t c = 1; c <= cols_; ++c) local += std::llround(u_[at(r, c)] * kScale);
  }
  std::int64_t total = 0;
  check(MPI_Allreduce(&local, &total, 1, MPI_INT64_T, MPI_SUM, cart_), "MPI_Allreduce (energy)");
  return static_cast<double>(total) / kScale;
}

void Grid::load(const std::vector<double>& block) {
  if (block.size() != static_cast<std::size_t>(rows_ * cols_)) {
    throw std::invalid_argument("restored block has the wrong size");
  }
  for (std::int64_t r = 0; r < rows_; ++r) {
    std::copy_n(block.begin() + r * cols_, cols_,
                u_.begin() + static_cast<std::ptrdiff_t>(at(r + 1, 1)));
  }
}

std::vector<double> Grid::block() const {
  std::vector<double> out(static_cast<std::size_t>(rows_ * cols_));
  for (std::int64_t r = 0; r < rows_; ++r) {
    std::copy_n(u_.begin() + static_cast<std::ptrdiff_t>(at(r + 1, 1)), cols_,
                out.begin() + r * cols_);
  }
  return out;
}

}  // namespace heat2d
