// cairn C ABI — the option structs: their defaults, and their translation into the C++
// option aggregates. A struct is read up to its struct_size, so a program built against an
// older cairn.h (a shorter struct) gets the defaults for the fields it does not know.
#pragma once

#include <cairn/cairn.h>
#include <cairn/manager.hpp>
#include <cairn/multihost.hpp>
#include <cairn/storage.hpp>

#include <algorithm>
#include <cstring>
#include <string>

namespace cairn::capi {

/// The defaults of each option struct (struct_size = its full size).
cairn_manager_options default_manager_options() noexcept;
cairn_save_options default_save_options() noexcept;
cairn_restore_options default_restore_options() noexcept;
cairn_multihost_options default_multihost_options() noexcept;
cairn_array_desc default_array_desc() noexcept;
cairn_leaf_save_args default_leaf_save_args() noexcept;

/// Copies the defaults into the first `struct_size` bytes of `*options`. Throws
/// InvalidArgument for a NULL pointer or a struct_size too small to hold the size itself.
template <class Options>
void init_options(Options* options, std::size_t struct_size, const Options& defaults,
                  const char* what) {
  if (options == nullptr) throw InvalidArgument(std::string(what) + " is NULL");
  if (struct_size < sizeof(std::size_t)) {
    throw InvalidArgument(std::string(what) + ": struct_size " + std::to_string(struct_size) +
                          " is too small; pass sizeof the struct");
  }
  std::memcpy(options, &defaults, std::min(struct_size, sizeof(Options)));
  options->struct_size = struct_size;
}

/// The caller's options completed with defaults for the fields past its struct_size; the
/// defaults when `options` is NULL. Throws InvalidArgument for a struct_size that was never set
/// (smaller than the size field itself).
template <class Options>
Options read_options(const Options* options, const Options& defaults, const char* what) {
  Options full = defaults;
  if (options == nullptr) return full;
  if (options->struct_size < sizeof(std::size_t)) {
    throw InvalidArgument(std::string(what) + ": struct_size " +
                          std::to_string(options->struct_size) +
                          " is too small; fill the struct with its _init function first");
  }
  std::memcpy(&full, options, std::min(options->struct_size, sizeof(Options)));
  full.struct_size = sizeof(Options);
  return full;
}

/// The C++ manager options for C options (NULL: defaults). Throws InvalidArgument.
CheckpointManagerOptions manager_options(const cairn_manager_options* options);
/// The manager save options and the tree save options for C options. Throws InvalidArgument.
ManagerSaveOptions manager_save_options(const cairn_save_options& options);
TreeSaveOptions tree_save_options(const cairn_save_options& options);
/// The target restore and as-saved options for C options. Throws InvalidArgument.
TreeRestoreOptions tree_restore_options(const cairn_restore_options& options);
AsSavedOptions as_saved_options(const cairn_restore_options& options);
/// The multihost options for C options (NULL: defaults). Throws InvalidArgument.
MultihostOptions multihost_options(const cairn_multihost_options* options);

}  // namespace cairn::capi
