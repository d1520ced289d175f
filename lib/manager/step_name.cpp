// Step name formats (Orbax's NameFormat): how step numbers become directory names and back.
#include <cairn/checkpoint_root.hpp>
#include <cairn/manager.hpp>
#include <fmt/format.h>

#include <charconv>

#include "manager/step_dirs.hpp"

namespace cairn {

StepAlreadyExists::StepAlreadyExists(std::int64_t step, std::string message)
    : InvalidArgument(std::move(message)), step_(step) {}

namespace {

// `<prefix><separator><step>`, the step zero-padded to a fixed length when given; without a
// prefix, the bare step.
class PrefixedStepName final : public StepNameFormat {
 public:
  PrefixedStepName(std::string kind, std::string prefix, std::string separator,
                   std::optional<int> fixed_length)
      : kind_(std::move(kind)),
        prefix_(std::move(prefix)),
        lead_(prefix_.empty() ? std::string() : prefix_ + separator),
        fixed_length_(fixed_length) {
    if (prefix_.find('/') != std::string::npos || prefix_.find('\0') != std::string::npos) {
      throw InvalidArgument(fmt::format(
          "step_name_format::{}: the step prefix '{}' must not hold '/' or NUL", kind_, prefix_));
    }
    if (fixed_length_ && (*fixed_length_ < 1 || *fixed_length_ > 18)) {
      throw InvalidArgument(
          fmt::format("step_name_format::{}: step_format_fixed_length must be in [1, 18], not {}",
                      kind_, *fixed_length_));
    }
  }

  [[nodiscard]] std::string build_name(std::int64_t step) const override {
    if (step < 0) throw InvalidArgument(fmt::format("step {} is negative", step));
    return fixed_length_ ? fmt::format("{}{:0{}}", lead_, step, *fixed_length_)
                         : fmt::format("{}{}", lead_, step);
  }

  [[nodiscard]] std::optional<std::int64_t> parse_name(std::string_view name) const override {
    if (!name.starts_with(lead_)) return std::nullopt;
    const std::string_view digits = name.substr(lead_.size());
    if (digits.empty() || digits.size() > 18 ||
        digits.find_first_not_of("0123456789") != std::string_view::npos) {
      return std::nullopt;
    }
    std::int64_t step = 0;
    std::from_chars(digits.data(), digits.data() + digits.size(), step);
    // Only the canonical spelling counts, so "step_7" and "step_007" are not both step 7.
    if (build_name(step) != name) return std::nullopt;
    return step;
  }

  [[nodiscard]] std::string describe() const override {
    std::string text = fmt::format("{}(prefix='{}'", kind_, prefix_);
    if (fixed_length_) text += fmt::format(", fixed_length={}", *fixed_length_);
    return text + ")";
  }

 private:
  std::string kind_;
  std::string prefix_;
  std::string lead_;  // what precedes the digits
  std::optional<int> fixed_length_;
};

}  // namespace

namespace manager {

// The spelling PrefixedStepName::describe() writes, read back.
StepNameFormatPtr step_name_format_from_description(std::string_view text) {
  const bool standard = text.starts_with("standard(prefix='");
  if (!standard && !text.starts_with("joined(prefix='")) return nullptr;
  text.remove_prefix(text.find('\'') + 1);
  std::optional<int> fixed_length;
  constexpr std::string_view kFixed = "', fixed_length=";
  std::string_view prefix;
  if (const auto at = text.rfind(kFixed); at != std::string_view::npos) {
    prefix = text.substr(0, at);
    const std::string_view number = text.substr(at + kFixed.size());
    int value = 0;
    const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (error != std::errc() || std::string_view(end, number.data() + number.size()) != ")") {
      return nullptr;
    }
    fixed_length = value;
  } else if (text.ends_with("')")) {
    prefix = text.substr(0, text.size() - 2);
  } else {
    return nullptr;
  }
  try {
    return standard ? step_name_format::standard(std::string(prefix), fixed_length)
                    : step_name_format::joined(std::string(prefix), fixed_length);
  } catch (const Error&) {
    return nullptr;
  }
}

}  // namespace manager

namespace step_name_format {

StepNameFormatPtr standard(std::string prefix, std::optional<int> fixed_length) {
  return std::make_shared<const PrefixedStepName>("standard", std::move(prefix), "_", fixed_length);
}

StepNameFormatPtr joined(std::string prefix, std::optional<int> fixed_length) {
  return std::make_shared<const PrefixedStepName>("joined", std::move(prefix), "", fixed_length);
}

StepNameFormatPtr clu() { return joined("ckpt-"); }

}  // namespace step_name_format

}  // namespace cairn
