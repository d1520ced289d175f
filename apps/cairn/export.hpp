// cairn (the command-line tool) — `cairn dump --npy/--raw`: one array written to a file that
// numpy (np.load, np.fromfile), MATLAB and ParaView read without cairn.
#pragma once

#include <cairn/comm.hpp>
#include <cairn/dtype.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cairn_tool {

/// The file formats of an exported array.
enum class ExportFormat {
  npy,  ///< NumPy's .npy (version 1.0, or 2.0 for a header over 64 KiB): a header, then the data
  raw,  ///< the data alone
};

/// The `descr` of `dtype` in a .npy header ("<f8", "|b1", ...), or std::nullopt for a dtype
/// NumPy has none for (bfloat16). Never throws beyond std::bad_alloc.
[[nodiscard]] std::optional<std::string> npy_descr(cairn::DType dtype);

/// The whole .npy header of a C-order array of `dtype` and `shape` (magic, version, length,
/// the dictionary padded so that the data starts at a multiple of 64 bytes). Throws
/// cairn::InvalidArgument for a dtype without a descr.
[[nodiscard]] std::string npy_header(cairn::DType dtype, const std::vector<std::int64_t>& shape);

/// A file that the primary rank writes from the bytes of one array (row-major, little-endian),
/// under a temporary name next to `path` until commit() puts it in place; a writer destroyed
/// before its commit removes the temporary file, so a failed export leaves no partial file and
/// an existing one untouched. Write errors are kept and reported by commit(), so that every
/// rank goes on reading to the same end.
class ExportFile {
 public:
  /// Checks `path` on the primary rank and creates the temporary file: refuses a path inside
  /// a checkpoint or a checkpoint root (cairn::enclosing_cairn_directory()), with `force` or
  /// not, a directory, an existing file unless `force`, and a path that cannot be written, each
  /// with a message naming the path. Collective; throws CommandError on every rank.
  ExportFile(const cairn::Comm& comm, std::filesystem::path path, ExportFormat format, bool force);
  ~ExportFile();
  ExportFile(const ExportFile&) = delete;
  ExportFile& operator=(const ExportFile&) = delete;

  /// Starts the array (the .npy header). Primary rank only; never throws beyond
  /// std::bad_alloc and cairn::InvalidArgument (see npy_header).
  void begin(cairn::DType dtype, const std::vector<std::int64_t>& shape);
  /// Appends elements of the array's dtype in native byte order (stored little-endian).
  /// Primary rank only; never throws beyond std::bad_alloc.
  void write(std::span<const std::byte> elements);
  /// Closes the file and puts it at its path (never over a file that appeared meanwhile,
  /// without force). Collective; throws CommandError on every rank naming the path when a
  /// write or the rename failed. Returns the bytes of the file on the primary rank (0 on the
  /// others).
  std::uint64_t commit();

  /// The path the file is written to.
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  void fail(const std::string& what, int error);

  const cairn::Comm& comm_;
  std::filesystem::path path_;
  std::filesystem::path temporary_;
  ExportFormat format_;
  bool force_;
  int fd_ = -1;
  cairn::DType dtype_ = cairn::DType::uint8;
  std::uint64_t bytes_ = 0;
  std::string error_;  ///< the first failure on the primary rank
  std::vector<std::byte> swapped_;
};

}  // namespace cairn_tool
