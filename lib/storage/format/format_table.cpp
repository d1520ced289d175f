// The table of storage formats, and the public calls that read it.
#include "storage/format/format_table.hpp"

#include <cairn/error.hpp>
#include <fmt/format.h>

#include <array>

namespace cairn::storage {

// Each format's row, defined in its folder (format/<name>/row.cpp).
const FormatRow& hdf5_format_row();
const FormatRow& posix_format_row();

namespace {

// In StorageFormat order: a row's position is its enum value.
const std::array<const FormatRow*, 2>& rows() {
  static const std::array<const FormatRow*, 2> table = {&hdf5_format_row(), &posix_format_row()};
  return table;
}

const FormatRow* find_row(StorageFormat format) noexcept {
  const auto at = static_cast<std::size_t>(format);
  return at < rows().size() ? rows()[at] : nullptr;
}

}  // namespace

std::span<const FormatRow* const> format_rows() noexcept { return rows(); }

const FormatRow& format_row(StorageFormat format) {
  if (const FormatRow* row = find_row(format)) return *row;
  throw InvalidArgument(fmt::format("unknown storage format {}", static_cast<int>(format)));
}

}  // namespace cairn::storage

namespace cairn {

std::string_view storage_format_name(StorageFormat format) noexcept {
  const storage::FormatRow* row = storage::find_row(format);
  return row != nullptr ? row->name : "invalid";
}

std::optional<StorageFormat> storage_format_from_name(std::string_view name) noexcept {
  for (const storage::FormatRow* row : storage::format_rows()) {
    if (row->name == name) return row->format;
  }
  return std::nullopt;
}

bool storage_format_available(StorageFormat format) noexcept {
  const storage::FormatRow* row = storage::find_row(format);
  return row != nullptr && row->built;
}

std::string storage_format_unavailable(StorageFormat format) {
  const storage::FormatRow* row = storage::find_row(format);
  if (row == nullptr) return fmt::format("unknown storage format {}", static_cast<int>(format));
  if (row->built) return {};
  return fmt::format("format {} is not available in this build of cairn (configure cairn with {})",
                     row->name, row->how_to_build);
}

std::vector<StorageFormatInfo> storage_formats() {
  std::vector<StorageFormatInfo> out;
  for (const storage::FormatRow* row : storage::format_rows()) {
    out.push_back({.format = row->format,
                   .name = row->name,
                   .summary = row->summary,
                   .available = row->built});
  }
  return out;
}

}  // namespace cairn
