// cairn — private helper of the tree layer: quoting untrusted text inside error messages.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cairn::tree_detail {

/// `text` in single quotes, with bytes outside printable ASCII (and the quote and backslash)
/// escaped as \xNN, shortened to about `max_chars` characters with "..." so that hostile
/// input cannot flood a message. Never throws beyond std::bad_alloc.
inline std::string quote(std::string_view text, std::size_t max_chars = 80) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "'";
  std::size_t shown = 0;
  for (const char c : text) {
    if (shown >= max_chars) {
      out += "...";
      break;
    }
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7f || c == '\'' || c == '\\') {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += c;
    }
    ++shown;
  }
  out += "'";
  return out;
}

}  // namespace cairn::tree_detail
