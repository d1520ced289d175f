// Orbax's preservation_policy_test.py, re-expressed: which steps each preservation policy
// keeps. Each TEST names the Orbax test it mirrors; the parameter sets are Orbax's.
#include <cairn/error.hpp>
#include <cairn/policies.hpp>
#include <gtest/gtest.h>

#include <limits>

using namespace cairn;
namespace pp = cairn::preservation_policy;
using Steps = std::vector<std::int64_t>;

namespace {

const auto kStart = std::chrono::system_clock::time_point(std::chrono::hours(480000));

// Orbax get_checkpoints: the steps one second apart, without metrics.
std::vector<CheckpointInfo> checkpoints(const Steps& steps = {0, 1, 2, 3, 4}) {
  std::vector<CheckpointInfo> out;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    out.push_back({.step = steps[i], .time = kStart + std::chrono::seconds(i)});
  }
  return out;
}

// Orbax get_preserved_checkpoints: the steps the policy keeps, ascending.
Steps preserved(const std::vector<CheckpointInfo>& infos, const PreservationPolicy& policy) {
  const auto kept = policy.should_keep(infos);
  return {kept.begin(), kept.end()};
}

// Orbax's `loss` lists: a metric per checkpoint, or none.
std::vector<CheckpointInfo> with_losses(std::vector<CheckpointInfo> infos,
                                        const std::vector<std::optional<double>>& loss) {
  for (std::size_t i = 0; i < infos.size() && i < loss.size(); ++i) infos[i].metric = loss[i];
  return infos;
}

constexpr auto kNone = std::numeric_limits<std::int64_t>::max();  // Orbax n=None

}  // namespace

// test_latest_n_policy (n=None is PreserveAll in cairn: LatestN takes a count).
TEST(OrbaxPreservationPolicy, test_latest_n_policy) {
  EXPECT_EQ(preserved(checkpoints(), pp::PreserveAll()), (Steps{0, 1, 2, 3, 4}));
  EXPECT_EQ(preserved(checkpoints(), pp::LatestN(3)), (Steps{2, 3, 4}));
  EXPECT_EQ(preserved(checkpoints(), pp::LatestN(15)), (Steps{0, 1, 2, 3, 4}));
}

TEST(OrbaxPreservationPolicy, test_every_n_seconds_policy) {
  using std::chrono::seconds;
  EXPECT_EQ(preserved(checkpoints(), pp::EveryNSeconds(seconds(1))), (Steps{0, 1, 2, 3, 4}));
  EXPECT_EQ(preserved(checkpoints(), pp::EveryNSeconds(seconds(3))), (Steps{0, 3}));
  EXPECT_EQ(preserved(checkpoints(), pp::EveryNSeconds(seconds(6))), (Steps{0}));
}

TEST(OrbaxPreservationPolicy, test_every_n_steps_policy) {
  const Steps sparse = {0, 1, 2, 4, 5, 8, 9, 13, 14, 25};
  EXPECT_EQ(preserved(checkpoints(), pp::EveryNSteps(1)), (Steps{0, 1, 2, 3, 4}));
  EXPECT_EQ(preserved(checkpoints({0, 1, 2, 4}), pp::EveryNSteps(3)), (Steps{0}));
  EXPECT_EQ(preserved(checkpoints({0, 1, 2, 4}), pp::EveryNSteps(3, false)), (Steps{0, 4}));
  EXPECT_EQ(preserved(checkpoints(), pp::EveryNSteps(6)), (Steps{0}));
  EXPECT_EQ(preserved(checkpoints(sparse), pp::EveryNSteps(3, false)), (Steps{0, 4, 8, 13, 25}));
  EXPECT_EQ(preserved(checkpoints(), pp::EveryNSteps(1, true, 3)), (Steps{2, 3, 4}));
  EXPECT_EQ(preserved(checkpoints(sparse), pp::EveryNSteps(3, false, 3)), (Steps{8, 13, 25}));
}

TEST(OrbaxPreservationPolicy, test_every_n_steps_closest_policy) {
  const Steps sparse = {0, 1, 2, 4, 5, 8, 9, 13, 14, 25};
  EXPECT_EQ(preserved(checkpoints(), pp::EveryNStepsClosest(1)), (Steps{0, 1, 2, 3, 4}));
  // 2 and 4 are as close to 3: the later one is kept.
  EXPECT_EQ(preserved(checkpoints({0, 1, 2, 4}), pp::EveryNStepsClosest(3)), (Steps{0, 4}));
  EXPECT_EQ(preserved(checkpoints(sparse), pp::EveryNStepsClosest(3)),
            (Steps{0, 4, 5, 9, 13, 14, 25}));
  EXPECT_EQ(preserved(checkpoints(), pp::EveryNStepsClosest(1, 3)), (Steps{2, 3, 4}));
  EXPECT_EQ(preserved(checkpoints(sparse), pp::EveryNStepsClosest(3, 3)), (Steps{13, 14, 25}));
}

// Orbax raises when the policy is used; cairn when it is made.
TEST(OrbaxPreservationPolicy, test_every_zero_steps_closest_policy_raises_error) {
  EXPECT_THROW(pp::EveryNStepsClosest(0), InvalidArgument);
}

TEST(OrbaxPreservationPolicy, test_every_zero_steps_policy_raises_error) {
  EXPECT_THROW(pp::EveryNSteps(0), InvalidArgument);
}

TEST(OrbaxPreservationPolicy, test_custom_steps_policy) {
  EXPECT_EQ(preserved(checkpoints(), pp::CustomSteps({0, 2, 3})), (Steps{0, 2, 3}));
  EXPECT_EQ(preserved(checkpoints(), pp::CustomSteps({0, 1, 2, 3, 4})), (Steps{0, 1, 2, 3, 4}));
  EXPECT_EQ(preserved(checkpoints(), pp::CustomSteps({14, 13})), (Steps{}));
}

// Orbax reverse=True: the smallest loss is best (BestMode::min).
TEST(OrbaxPreservationPolicy, test_best_n_policy) {
  const auto none = std::nullopt;
  EXPECT_EQ(preserved(with_losses(checkpoints(), {5, none, 3, none, 7}),
                      pp::BestN(kNone, BestMode::min, true)),
            (Steps{0, 1, 2, 3, 4}));
  EXPECT_EQ(preserved(with_losses(checkpoints(), {7, none, 4, none, 5}),
                      pp::BestN(1, BestMode::min, true)),
            (Steps{1, 2, 3}));
  EXPECT_EQ(preserved(with_losses(checkpoints(), {5, none, 4, none, 7}),
                      pp::BestN(4, BestMode::min, true)),
            (Steps{0, 1, 2, 3, 4}));
  EXPECT_EQ(preserved(with_losses(checkpoints(), {5, none, 4, none, 7}),
                      pp::BestN(4, BestMode::min, false)),
            (Steps{0, 2, 4}));
}

TEST(OrbaxPreservationPolicy, test_joint_preservation_policy) {
  const pp::AnyOf policy({std::make_shared<pp::LatestN>(3),
                          std::make_shared<pp::EveryNSeconds>(std::chrono::seconds(3)),
                          std::make_shared<pp::CustomSteps>(std::set<std::int64_t>{0, 3}),
                          std::make_shared<pp::BestN>(2, BestMode::min),
                          std::make_shared<pp::EveryNSteps>(6)});
  const auto none = std::nullopt;
  const auto infos = with_losses(checkpoints({0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11}),
                                 {5, none, 4, none, 3, none, 11, none, 8, none, 12});
  EXPECT_EQ(preserved(infos, policy), (Steps{0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11}));
}

TEST(OrbaxPreservationPolicy, test_latest_duration_policy) {
  using std::chrono::hours;
  const auto now = kStart;
  const std::vector<CheckpointInfo> infos = {{.step = 0, .time = now - hours(30)},
                                             {.step = 1, .time = now - hours(25)},
                                             {.step = 2, .time = now - hours(23)},
                                             {.step = 3, .time = now - hours(10)}};
  const auto clock = [now] { return now; };
  EXPECT_EQ(preserved(infos, pp::LatestDuration(hours(24), clock)), (Steps{2, 3}));
  EXPECT_EQ(preserved(infos, pp::LatestDuration(hours(28), clock)), (Steps{1, 2, 3}));
  EXPECT_EQ(preserved(infos, pp::LatestDuration(hours(5), clock)), (Steps{}));
  EXPECT_EQ(preserved(infos, pp::LatestDuration(hours(100), clock)), (Steps{0, 1, 2, 3}));
}
