// The --redundancy option of cairn's command-line programs (heat2d, `cairn drain`): what
// cairn::LocalRedundancy::parse() reads ("none", "partner[=D]", "xor[=G]"). Header-only, on
// cairn's public API and CLI11.
#pragma once

#include <cairn/levels.hpp>

#include <CLI/CLI.hpp>
#include <string>

namespace cairn_app {

/// Accepts what cairn::LocalRedundancy::parse() reads; refuses anything else with its message.
inline const CLI::Validator& redundancy_option() {
  static const CLI::Validator validator(
      [](std::string& text) -> std::string {
        try {
          (void)cairn::LocalRedundancy::parse(text);
          return {};
        } catch (const cairn::InvalidArgument& e) {
          return e.what();
        }
      },
      "");
  return validator;
}

}  // namespace cairn_app
