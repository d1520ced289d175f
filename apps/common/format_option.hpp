// The --format option of cairn's command-line programs: the storage formats come from
// cairn::storage_formats(), so no program keeps a list of its own. Header-only, on cairn's
// public API and CLI11.
#pragma once

#include <cairn/storage.hpp>

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace cairn_app {

/// The names of every storage format cairn knows, available in this build or not (an
/// unavailable one is refused by available_format() with the reason). Never throws beyond
/// std::bad_alloc.
inline std::vector<std::string> storage_format_names() {
  std::vector<std::string> names;
  for (const cairn::StorageFormatInfo& format : cairn::storage_formats()) {
    names.emplace_back(format.name);
  }
  return names;
}

/// Accepts the name of a storage format this build of cairn can write; refuses another with
/// the reason (cairn::storage_format_unavailable()).
inline const CLI::Validator& available_format() {
  static const CLI::Validator validator(
      [](std::string& name) -> std::string {
        const auto format = cairn::storage_format_from_name(name);
        return format ? cairn::storage_format_unavailable(*format) : std::string();
      },
      "");
  return validator;
}

}  // namespace cairn_app
