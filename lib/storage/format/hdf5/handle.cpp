#include "storage/format/hdf5/handle.hpp"

#include <cairn/error.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <fmt/format.h>
#include <vector>

#include "base/log.hpp"

namespace cairn::storage {

std::recursive_mutex& hdf5_mutex() noexcept {
  // A function-local static: constructed on first use, safe from static-order problems.
  static std::recursive_mutex mutex;
  return mutex;
}

}  // namespace cairn::storage

namespace cairn::storage::h5 {
namespace {

// Longest error-stack text put into a message; HDF5 stacks of a failed MPI-IO call can be
// dozens of entries deep, and the outermost and innermost ones say the most.
constexpr std::size_t kMaxStackEntries = 12;
constexpr std::size_t kMaxDescription = 400;

struct StackEntry {
  hid_t major = H5I_INVALID_HID;
  hid_t minor = H5I_INVALID_HID;
  std::string function;
  std::string description;
};

herr_t collect_entry(unsigned /*n*/, const H5E_error2_t* error, void* data) noexcept {
  try {
    auto* entries = static_cast<std::vector<StackEntry>*>(data);
    entries->push_back({error->maj_num, error->min_num,
                        error->func_name != nullptr ? error->func_name : "",
                        error->desc != nullptr ? error->desc : ""});
    return 0;
  } catch (...) {
    return -1;  // stops the walk; what was collected so far is still used
  }
}

std::string message_text(hid_t id) {
  if (id < 0) return {};
  std::array<char, 256> buffer{};
  const ssize_t length = H5Eget_msg(id, nullptr, buffer.data(), buffer.size());
  if (length <= 0) return {};
  return std::string(buffer.data());
}

std::string entry_text(const StackEntry& entry) {
  std::string text =
      entry.function.empty() ? std::string("(unknown function)") : entry.function + "()";
  if (!entry.description.empty()) {
    // Some descriptions span lines ("time = ...\n, name = ..."): keep messages on one line.
    std::string description = entry.description.substr(0, kMaxDescription);
    std::replace(description.begin(), description.end(), '\n', ' ');
    text += ": " + description;
  }
  const std::string major = message_text(entry.major);
  const std::string minor = message_text(entry.minor);
  if (!major.empty() || !minor.empty()) text += fmt::format(" [{}: {}]", major, minor);
  return text;
}

}  // namespace

QuietErrors::QuietErrors() noexcept {
  // H5Eget_auto2 fails when the application installed an old-style (H5E_auto1_t) handler;
  // then leave everything as it is rather than lose that handler.
  if (H5Eget_auto2(H5E_DEFAULT, &saved_func_, &saved_data_) < 0) return;
  saved_ = H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr) >= 0;
}

QuietErrors::~QuietErrors() {
  if (saved_) (void)H5Eset_auto2(H5E_DEFAULT, saved_func_, saved_data_);
}

std::string error_stack_text() {
  // Take the stack off the default one first: H5Eget_msg is an API call and must not run
  // while the stack being read could be cleared.
  const hid_t stack = H5Eget_current_stack();
  if (stack < 0) return "no HDF5 error details (the error stack could not be read)";
  std::vector<StackEntry> entries;
  (void)H5Ewalk2(stack, H5E_WALK_DOWNWARD, collect_entry, &entries);
  (void)H5Eclose_stack(stack);
  if (entries.empty()) return "no HDF5 error details";

  std::vector<std::string> parts;
  const std::size_t n = entries.size();
  for (std::size_t i = 0; i < n; ++i) {
    // Keep the outermost two (the API call) and the innermost ones (the cause).
    if (n > kMaxStackEntries && i >= 2 && i < n - (kMaxStackEntries - 2)) {
      if (i == 2) parts.push_back(fmt::format("... {} more ...", n - kMaxStackEntries));
      continue;
    }
    parts.push_back(entry_text(entries[i]));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

std::string failure_message(const Where& where, std::string_view what, std::string_view hint) {
  std::string place = where.leaf.empty()
                          ? fmt::format("file '{}'", where.file)
                          : fmt::format("leaf '{}', file '{}'", where.leaf, where.file);
  std::string message =
      fmt::format("HDF5 error while {} ({}): {}", what, place, error_stack_text());
  if (!hint.empty()) message += fmt::format(". {}", hint);
  return message;
}

void throw_failure(const Where& where, std::string_view what, std::string_view hint) {
  throw IoError(std::string(where.file), failure_message(where, what, hint));
}

herr_t close_id(Kind kind, hid_t id) noexcept {
  switch (kind) {
    case Kind::file: return H5Fclose(id);
    case Kind::dataset: return H5Dclose(id);
    case Kind::dataspace: return H5Sclose(id);
    case Kind::datatype: return H5Tclose(id);
    case Kind::plist: return H5Pclose(id);
    case Kind::group: return H5Gclose(id);
    case Kind::attribute: return H5Aclose(id);
  }
  return -1;
}

std::string_view kind_name(Kind kind) noexcept {
  switch (kind) {
    case Kind::file: return "file";
    case Kind::dataset: return "dataset";
    case Kind::dataspace: return "dataspace";
    case Kind::datatype: return "datatype";
    case Kind::plist: return "property list";
    case Kind::group: return "group";
    case Kind::attribute: return "attribute";
  }
  return "identifier";
}

void log_close_failure(Kind kind, hid_t id) noexcept {
  try {
    base::log::warn("hdf5.close_failed", "kind=\"{}\" id={} error=\"{}\"", kind_name(kind), id,
                    error_stack_text());
  } catch (...) {
    // Logging must not turn a destructor into a failure.
  }
}

}  // namespace cairn::storage::h5
