// cairn — RAII owners of HDF5 identifiers and checked HDF5 calls (internal).
//
// Every hid_t cairn creates lives in an h5::Handle of the matching kind, closed in a noexcept
// destructor that logs a failure; every HDF5 call that can fail goes through h5::check(),
// which turns a negative return into an IoError naming the file, the leaf and the text of
// the HDF5 error stack. While cairn calls HDF5, an h5::QuietErrors object silences HDF5's
// automatic printing of the error stack (restoring the application's handler afterwards), so
// an error reaches the user once, as a cairn::Error.
//
// Nothing in this header is collective by itself; whether an HDF5 call is collective depends
// on the call. The hdf5 format makes its calls on the primary alone, through HDF5's POSIX
// driver, except at close: every rank opens data.h5 with the MPI-IO driver and writes the
// compressed datasets with collective H5Dwrite calls (writer.hpp, compression.hpp).
//
// HDF5 is not built thread-safe: every cairn call into HDF5 happens with hdf5_mutex() held.
#pragma once

#include <hdf5.h>

#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace cairn::storage {

/// The process-wide lock of every HDF5 call cairn makes. HDF5 is not built thread-safe, and
/// the async checkpointer writes data.h5 on a background thread while other threads may
/// read or write other HDF5 files. Hdf5Writer and Hdf5Reader hold it around their HDF5 calls
/// (and the destruction of their handles), and so must any other code calling HDF5 in
/// cairn, including the QuietErrors scope (it changes the process's error handler).
/// Recursive, so a member holding it may call another that takes it again. Every rank holds
/// it through the collective writes of compressed datasets (h5::write_filtered()), which
/// no other HDF5 call of the process may interleave. Not collective; never throws.
[[nodiscard]] std::recursive_mutex& hdf5_mutex() noexcept;

}  // namespace cairn::storage

namespace cairn::storage::h5 {

/// Where an HDF5 call happens, for error messages: the file and the leaf (may be empty).
struct Where {
  std::string_view file;
  std::string_view leaf;
};

/// Silences HDF5's automatic error printing on the default error stack for its lifetime and
/// restores the handler that was installed before (the application's, or HDF5's default).
/// Nests. Not collective; never throws. When the application installed an H5E_auto1_t
/// handler (which H5Eget_auto2 cannot save), nothing is changed.
class QuietErrors {
 public:
  QuietErrors() noexcept;
  ~QuietErrors();
  QuietErrors(const QuietErrors&) = delete;
  QuietErrors& operator=(const QuietErrors&) = delete;

 private:
  H5E_auto2_t saved_func_ = nullptr;
  void* saved_data_ = nullptr;
  bool saved_ = false;
};

/// The text of the current HDF5 error stack ("H5Dcreate2(): unable to create dataset
/// [Dataset: unable to initialize object]; ..."), outermost call first, shortened when
/// long; "no HDF5 error details" when the stack is empty. Clears the stack. Call it right
/// after the failed call: the next HDF5 API call clears the stack. Not collective; never
/// throws beyond std::bad_alloc.
[[nodiscard]] std::string error_stack_text();

/// The message of an HDF5 failure: "HDF5 error while <what> (leaf 'x', file 'f'): <stack>.
/// <hint>". Consumes the error stack (see error_stack_text()). Not collective.
[[nodiscard]] std::string failure_message(const Where& where, std::string_view what,
                                          std::string_view hint = {});

/// Throws IoError(where.file, failure_message(where, what, hint)). Not collective.
[[noreturn]] void throw_failure(const Where& where, std::string_view what,
                                std::string_view hint = {});

/// Returns `result` when it is non-negative (a valid hid_t, herr_t success or htri_t
/// verdict); otherwise throws IoError naming where.file and where.leaf, saying that
/// `what` failed ("creating the dataset"), with the HDF5 error stack's text and `hint`
/// (what the user can do). Not collective.
template <class T>
T check(T result, const Where& where, std::string_view what, std::string_view hint = {}) {
  static_assert(std::is_integral_v<T> && std::is_signed_v<T>,
                "h5::check takes hid_t, herr_t, htri_t or ssize_t results");
  if (result < 0) throw_failure(where, what, hint);
  return result;
}

/// What an identifier refers to; each kind has its own H5*close function.
enum class Kind { file, dataset, dataspace, datatype, plist, group, attribute };

/// Closes `id` with the close function of `kind`. Not collective; never throws.
herr_t close_id(Kind kind, hid_t id) noexcept;
/// "file", "dataset", ... Never throws.
[[nodiscard]] std::string_view kind_name(Kind kind) noexcept;
/// Logs a failed close of `id` (a destructor cannot throw). Never throws.
void log_close_failure(Kind kind, hid_t id) noexcept;

/// Move-only owner of one HDF5 identifier of kind `K`. A moved-from or default-constructed
/// handle holds H5I_INVALID_HID. The destructor closes the identifier without throwing (a
/// failure is logged); close() closes it and reports a failure as IoError. Never wrap a
/// library-owned identifier (H5T_NATIVE_INT, H5P_DEFAULT, ...): H5Tcopy it first.
template <Kind K>
class Handle {
 public:
  Handle() noexcept = default;
  /// Takes ownership of `id` (which may be H5I_INVALID_HID).
  explicit Handle(hid_t id) noexcept : id_(id) {}
  ~Handle() { reset(); }
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  /// The identifier (H5I_INVALID_HID when empty). Never throws.
  [[nodiscard]] hid_t get() const noexcept { return id_; }
  /// Whether the handle owns an identifier. Never throws.
  [[nodiscard]] bool valid() const noexcept { return id_ >= 0; }
  /// Gives up ownership and returns the identifier. Never throws.
  [[nodiscard]] hid_t release() noexcept { return std::exchange(id_, H5I_INVALID_HID); }

  /// Closes the identifier, logging a failure. Never throws.
  void reset() noexcept {
    const hid_t id = std::exchange(id_, H5I_INVALID_HID);
    if (id >= 0) {
      const QuietErrors quiet;
      if (close_id(K, id) < 0) log_close_failure(K, id);
    }
  }

  /// Closes the identifier; throws IoError naming `where` when HDF5 reports a failure (for
  /// a file: the last metadata could not be written). The handle is empty afterwards either
  /// way.
  void close(const Where& where) {
    const hid_t id = std::exchange(id_, H5I_INVALID_HID);
    if (id < 0) return;
    const QuietErrors quiet;
    if (close_id(K, id) < 0) {
      throw_failure(where, std::string("closing the ") + std::string(kind_name(K)));
    }
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

using File = Handle<Kind::file>;
using Dataset = Handle<Kind::dataset>;
using Dataspace = Handle<Kind::dataspace>;
using Datatype = Handle<Kind::datatype>;
using PropertyList = Handle<Kind::plist>;
using Group = Handle<Kind::group>;
using Attribute = Handle<Kind::attribute>;

}  // namespace cairn::storage::h5
