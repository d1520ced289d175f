// The Young/Daly checkpoint interval and the save policy built on it.
#include <cairn/error.hpp>
#include <cairn/levels.hpp>
#include <fmt/format.h>

#include <cmath>

namespace cairn {

std::chrono::duration<double> young_daly_interval(std::chrono::duration<double> cost,
                                                  std::chrono::duration<double> mtbf) {
  if (!(cost.count() > 0) || !(mtbf.count() > 0)) {
    throw InvalidArgument(fmt::format(
        "young_daly_interval: the save cost ({} s) and the MTBF ({} s) must both be positive",
        cost.count(), mtbf.count()));
  }
  return std::chrono::duration<double>(std::sqrt(2.0 * cost.count() * mtbf.count()));
}

namespace save_policy {

YoungDaly::YoungDaly(std::chrono::duration<double> mtbf, std::chrono::duration<double> assumed_cost)
    : mtbf_(mtbf), assumed_cost_(assumed_cost) {
  if (!(mtbf.count() > 0)) {
    throw InvalidArgument(
        fmt::format("YoungDaly: the MTBF must be positive, not {} s", mtbf.count()));
  }
  if (assumed_cost.count() < 0) {
    throw InvalidArgument(fmt::format(
        "YoungDaly: the assumed save cost must not be negative, not {} s", assumed_cost.count()));
  }
}

std::chrono::duration<double> YoungDaly::interval(std::chrono::duration<double> cost) const {
  return young_daly_interval(cost, mtbf_);
}

bool YoungDaly::should_save(const SaveContext& context) const {
  if (!context.last_saved_time) return true;
  const auto cost = context.last_save_cost.value_or(assumed_cost_);
  // Nothing measured and nothing assumed: save now, and measure.
  if (!(cost.count() > 0)) return true;
  const std::chrono::duration<double> since = context.now - *context.last_saved_time;
  return since >= interval(cost);
}

std::string YoungDaly::describe() const {
  return fmt::format("YoungDaly(mtbf={}s)", mtbf_.count());
}

}  // namespace save_policy
}  // namespace cairn
