#include "select.hpp"

#include <cstddef>

namespace cairn_tool {
namespace {

// Matches the bracket expression at the start of `pattern` ("[...]") against `c`; sets `length`
// to its length, 0 when it has no closing `]` (then `[` is an ordinary character).
bool class_match(std::string_view pattern, char c, std::size_t& length) {
  std::size_t i = 1;
  const bool negated = i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^');
  if (negated) ++i;
  bool found = false;
  const std::size_t first = i;
  for (; i < pattern.size() && (pattern[i] != ']' || i == first); ++i) {
    if (i + 2 < pattern.size() && pattern[i + 1] == '-' && pattern[i + 2] != ']') {
      found = found || (pattern[i] <= c && c <= pattern[i + 2]);
      i += 2;
    } else {
      found = found || pattern[i] == c;
    }
  }
  if (i >= pattern.size()) {
    length = 0;
    return false;
  }
  length = i + 1;
  return c != '/' && found != negated;
}

// glob_match of pattern[p..] against name[n..]; `memo` holds 0 (not yet known), 1 (no), 2 (yes)
// for each pair, which bounds the work by their product.
bool match_from(std::string_view pattern, std::string_view name, std::size_t p, std::size_t n,
                std::vector<char>& memo) {
  char& known = memo[p * (name.size() + 1) + n];
  if (known != 0) return known == 2;
  bool result = false;
  if (p == pattern.size()) {
    result = n == name.size();
  } else if (pattern[p] == '*') {
    const bool across = p + 1 < pattern.size() && pattern[p + 1] == '*';
    const std::size_t rest = across ? p + 2 : p + 1;
    // The star matches name[n, k) for each k it may reach.
    for (std::size_t k = n;; ++k) {
      if (match_from(pattern, name, rest, k, memo)) {
        result = true;
        break;
      }
      if (k == name.size() || (!across && name[k] == '/')) break;
    }
  } else if (n < name.size()) {
    std::size_t length = 1;
    bool one = false;
    if (pattern[p] == '?') {
      one = name[n] != '/';
    } else if (pattern[p] == '[') {
      one = class_match(pattern.substr(p), name[n], length);
      if (length == 0) {  // no closing bracket: a literal '['
        length = 1;
        one = name[n] == '[';
      }
    } else {
      one = pattern[p] == name[n];
    }
    result = one && match_from(pattern, name, p + length, n + 1, memo);
  }
  known = result ? 2 : 1;
  return result;
}

}  // namespace

bool is_glob_pattern(std::string_view text) noexcept {
  return text.find_first_of("*?[") != std::string_view::npos;
}

bool glob_match(std::string_view pattern, std::string_view name) {
  std::vector<char> memo((pattern.size() + 1) * (name.size() + 1), 0);
  return match_from(pattern, name, 0, 0, memo);
}

bool selected(std::string_view name, const std::vector<std::string>& wanted) {
  if (wanted.empty()) return true;
  for (const std::string& w : wanted) {
    if (name == w || (name.starts_with(w) && name.size() > w.size() && name[w.size()] == '/')) {
      return true;
    }
    if (!is_glob_pattern(w)) continue;
    // The pattern chooses the name, or an item or group the name lies under.
    for (std::size_t end = 0; end != std::string_view::npos; end = name.find('/', end + 1)) {
      if (end > 0 && glob_match(w, name.substr(0, end))) return true;
    }
    if (glob_match(w, name)) return true;
  }
  return false;
}

}  // namespace cairn_tool
