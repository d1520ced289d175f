// cairn C ABI — C callbacks as the manager's clocks, predicates, best metrics, commit notices
// and step name formats, and as the fill functions of derived restore leaves.
#include "capi/callbacks.hpp"

#include <boost/json/serialize.hpp>

#include <array>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "capi/handles.hpp"

namespace cairn::capi {
namespace {

// Step names from a C build function and parse function.
class CStepNameFormat final : public StepNameFormat {
 public:
  CStepNameFormat(cairn_step_name_build_fn build, cairn_step_name_parse_fn parse, void* user_data,
                  std::string description)
      : build_(build), parse_(parse), user_data_(user_data), description_(std::move(description)) {}

  [[nodiscard]] std::string build_name(std::int64_t step) const override {
    std::array<char, 4096> name{};
    if (build_(step, name.data(), name.size(), user_data_) != 0) {
      throw InvalidArgument("step_name_build failed for step " + std::to_string(step));
    }
    name.back() = '\0';
    const std::string_view built(name.data());
    if (built.empty() || built.find('/') != std::string_view::npos || built == "." ||
        built == "..") {
      throw InvalidArgument("step_name_build gave '" + std::string(built) + "' for step " +
                            std::to_string(step) +
                            ": a step name is one non-empty path "
                            "component");
    }
    return std::string(built);
  }

  [[nodiscard]] std::optional<std::int64_t> parse_name(std::string_view name) const override {
    const std::string copy(name);
    std::int64_t step = -1;
    if (parse_(copy.c_str(), &step, user_data_) == 0 || step < 0) return std::nullopt;
    return step;
  }

  [[nodiscard]] std::string describe() const override { return description_; }

 private:
  cairn_step_name_build_fn build_;
  cairn_step_name_parse_fn parse_;
  void* user_data_;
  std::string description_;
};

}  // namespace

std::function<std::chrono::system_clock::time_point()> clock_from_c(cairn_clock_fn fn,
                                                                    void* user_data) {
  if (fn == nullptr) return {};
  return [fn, user_data] {
    return std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::nanoseconds(fn(user_data))));
  };
}

ShouldSaveFunction should_save_from_c(cairn_should_save_latest_fn fn, void* user_data) {
  return [fn, user_data](std::int64_t step, std::optional<std::int64_t> latest) {
    return fn(step, latest.value_or(0), latest ? 1 : 0, user_data) != 0;
  };
}

std::function<std::optional<double>(const boost::json::object& metrics)> best_fn_from_c(
    cairn_best_fn fn, void* user_data) {
  return [fn, user_data](const boost::json::object& metrics) -> std::optional<double> {
    const std::string text = boost::json::serialize(metrics);
    double value = 0.0;
    if (fn(text.c_str(), &value, user_data) == 0) return std::nullopt;
    return value;
  };
}

std::function<void(std::int64_t step, const boost::json::object& metrics)> on_commit_from_c(
    cairn_on_commit_fn fn, void* user_data) {
  return [fn, user_data](std::int64_t step, const boost::json::object& metrics) {
    const std::string text = boost::json::serialize(metrics);
    if (const int status = fn(step, text.c_str(), user_data); status != 0) {
      throw InvalidArgument("on_commit returned " + std::to_string(status) + " for step " +
                            std::to_string(step) + " (the step is committed)");
    }
  };
}

PreservationPolicyPtr should_keep_policy(cairn_should_keep_fn fn, void* user_data) {
  if (fn == nullptr) throw InvalidArgument("should_keep_fn is NULL");
  return std::make_shared<preservation_policy::ShouldKeepFn>(
      [fn, user_data](std::int64_t step) { return fn(step, user_data) != 0; });
}

StepNameFormatPtr step_name_format_from_c(cairn_step_name_build_fn build,
                                          cairn_step_name_parse_fn parse, void* user_data,
                                          const char* description) {
  if (build == nullptr || parse == nullptr) {
    throw InvalidArgument("CAIRN_STEP_NAME_CUSTOM needs both step_name_build and step_name_parse");
  }
  return std::make_shared<CStepNameFormat>(build, parse, user_data,
                                           description != nullptr ? description : "custom");
}

}  // namespace cairn::capi

namespace cairn::capi {
namespace {

// The C description of `shard` (host memory), pointing into `dims`, which holds its global
// shape, box offset, box extents and strides, in that order, and must outlive the result.
cairn_array_desc desc_of(const ArrayShard& shard, std::vector<std::int64_t>& dims) {
  const std::size_t n = shard.global_shape.size();
  dims.clear();
  dims.insert(dims.end(), shard.global_shape.begin(), shard.global_shape.end());
  dims.insert(dims.end(), shard.box.offset.begin(), shard.box.offset.end());
  dims.insert(dims.end(), shard.box.extent.begin(), shard.box.extent.end());
  dims.insert(dims.end(), shard.strides.begin(), shard.strides.end());
  cairn_array_desc d{};
  d.struct_size = sizeof d;
  d.dtype = dtype_to_c(shard.dtype);
  d.ndim = static_cast<int>(n);
  d.global_dims = dims.data();
  d.offset = dims.data() + n;
  d.local_dims = dims.data() + 2 * n;
  d.strides = shard.strides.empty() ? nullptr : dims.data() + 3 * n;
  d.data = shard.data;
  d.memory = CAIRN_MEMORY_HOST;
  d.replicated = shard.replicated ? 1 : 0;
  d.fortran_order = shard.fortran_order ? 1 : 0;
  return d;
}

}  // namespace

std::pair<std::string, DerivedLeaf> derived_leaf_from_c(const cairn_derived_leaf& c,
                                                        const std::string& what) {
  std::string target(text(c.target, (what + ".target").c_str()));
  DerivedLeaf rule;
  rule.sources = strings(c.sources, c.source_count, (what + ".sources").c_str());
  if (c.fill != nullptr) {
    rule.fill = [fn = c.fill, data = c.user_data, target](std::span<const ArrayShard> sources,
                                                          const ArrayShard& shard) {
      std::vector<std::vector<std::int64_t>> dims(sources.size() + 1);
      std::vector<cairn_array_desc> descs;
      descs.reserve(sources.size());
      for (std::size_t i = 0; i < sources.size(); ++i) {
        descs.push_back(desc_of(sources[i], dims[i]));
      }
      const cairn_array_desc out = desc_of(shard, dims.back());
      if (const int status = fn(descs.data(), descs.size(), &out, data); status != 0) {
        throw InvalidArgument("derived leaf '" + target + "': its fill function returned " +
                              std::to_string(status));
      }
    };
  }
  return {std::move(target), std::move(rule)};
}

}  // namespace cairn::capi
