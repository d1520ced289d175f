// The --compression option of cairn's command-line programs (heat2d, `cairn convert`):
// "none", "zstd", "zstd=<level>" or "zfp=<absolute error>". Header-only, on cairn's public API
// and CLI11.
#pragma once

#include <cairn/storage.hpp>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>

namespace cairn_app {

/// The compression `text` names: "none", "zstd" (zstd's default level), "zstd=<level>" (1 to
/// 19) or "zfp=<absolute error>" (a positive number); std::nullopt for anything else. Never
/// throws.
inline std::optional<cairn::Compression> compression_from_text(std::string_view text) {
  if (text == "none") return cairn::Compression::none();
  if (text == "zstd") return cairn::Compression::zstd();
  constexpr std::string_view zstd = "zstd=";
  constexpr std::string_view zfp = "zfp=";
  const char* last = text.data() + text.size();
  if (text.starts_with(zstd)) {
    int level = 0;
    const auto [end, ec] = std::from_chars(text.data() + zstd.size(), last, level);
    if (ec != std::errc() || end != last || level < 1 || level > 19) return std::nullopt;
    return cairn::Compression::zstd(level);
  }
  if (!text.starts_with(zfp)) return std::nullopt;
  double bound = 0;
  const auto [end, ec] = std::from_chars(text.data() + zfp.size(), last, bound);
  if (ec != std::errc() || end != last || !(bound > 0) || !std::isfinite(bound)) {
    return std::nullopt;
  }
  return cairn::Compression::zfp_absolute(bound);
}

/// Accepts what compression_from_text() reads; refuses anything else with the forms it takes.
inline const CLI::Validator& compression_option() {
  static const CLI::Validator validator(
      [](std::string& text) -> std::string {
        return compression_from_text(text) ? std::string()
                                           : "'" + text +
                                                 "' is not none, zstd, zstd=<level 1-19> or "
                                                 "zfp=<positive absolute error>";
      },
      "");
  return validator;
}

}  // namespace cairn_app
