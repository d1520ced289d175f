// cairn (the command-line tool) — choosing leaves by name: the LEAF arguments of `cairn dump`
// and `cairn inspect`, exact names or glob patterns.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cairn_tool {

/// Whether `text` holds a glob character (`*`, `?` or `[`). Never throws.
[[nodiscard]] bool is_glob_pattern(std::string_view text) noexcept;

/// Whether the glob `pattern` matches all of `name`: `*` matches any run of characters but
/// `/`, `**` any run including `/`, `?` one character but `/`, `[abc]`, `[a-z]` and `[!abc]`
/// one character of (or not of) a set; any other character matches itself. A `[` without its
/// `]` matches itself. Never throws beyond std::bad_alloc.
[[nodiscard]] bool glob_match(std::string_view pattern, std::string_view name);

/// Whether the leaf `name` ("item/group/leaf") is chosen by one of `wanted`: an entry chooses
/// the leaf it names and every leaf under the item or group it names, and a glob pattern
/// (glob_match) does the same for each name it matches ("field/*" chooses every leaf of item
/// field, "*/u" the leaf u of every item). An empty `wanted` chooses every leaf. Never throws
/// beyond std::bad_alloc.
[[nodiscard]] bool selected(std::string_view name, const std::vector<std::string>& wanted);

}  // namespace cairn_tool
