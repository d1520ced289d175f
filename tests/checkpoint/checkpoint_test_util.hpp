// Helpers of the checkpoint tests: reference items (a block-decomposed field, JSON, bytes),
// restore targets, error checks, fault-point arming, and (support/gated_handler.hpp) a handler
// whose background write waits for a gate.
#pragma once

#include <cairn/checkpointer.hpp>
#include <cairn/handlers.hpp>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>
#include <vector>

#include "storage/storage_test_util.hpp"
#include "support/gated_handler.hpp"

namespace cairn::testing {

/// Global shape of the 2-D float64 leaf "fields/u" of every saved state.
inline const std::vector<std::int64_t> kFieldShape = {13, 10};

/// The reference float64 values of `box` of "fields/u", every byte XORed with `salt` so that
/// saves with different salts hold different data.
std::vector<std::byte> field_bytes(const Box& box, int salt);

/// The caller's state: this rank's box of "fields/u" (reference values) and the scalar
/// "time". tree() is a view of `data`: overwrite `data` to change what a later save sees.
class Field {
 public:
  Field(Box box, int salt);
  Field(const Field&) = delete;
  Field& operator=(const Field&) = delete;

  [[nodiscard]] ArrayTree tree();
  [[nodiscard]] static double time_of(int salt) { return 0.25 + salt; }

  Box box;
  std::vector<std::byte> data;
  double time;
};

/// A restore target: "fields/u" over `box` (filled with 0xEE) and "time" (0.0).
class FieldTarget {
 public:
  explicit FieldTarget(Box box);
  FieldTarget(const FieldTarget&) = delete;
  FieldTarget& operator=(const FieldTarget&) = delete;

  Box box;
  std::vector<std::byte> out;
  ArrayTree tree;
};

/// Checks a restored state against the reference of `salt`: the target's buffer holds the
/// reference values of its box and `restored` (the handler's result) the saved "time".
void expect_field(const FieldTarget& target, const ArrayTree& restored, int salt);
/// Checks a tree restored as saved: "fields/u" holds `box` with the reference values.
void expect_field_as_saved(const ArrayTree& restored, const Box& box, int salt);

/// This rank's opaque bytes (size and content depend on rank and salt).
std::vector<std::byte> rank_blob(int rank, int salt);
/// The bytes every rank passes for a replicated blob.
std::vector<std::byte> shared_blob(int salt);
/// A JSON item value.
boost::json::value meta_value(int salt);

/// The four items of a full composite save: "state" (the field, in `format`), "meta"
/// (JSON), "blob" (per-rank bytes) and "rep" (replicated bytes).
Composite full_save(Field& field, StorageFormat format, int rank, int salt);
/// Restore arguments for the four items, "state" into `target`.
Composite full_restore(FieldTarget& target);
/// Checks what full_restore() brought back on `rank`.
void expect_full(const CompositeResult& result, const FieldTarget& target, int rank, int salt);

/// `<dir>.cairn-tmp`.
std::filesystem::path tmp_of(const std::filesystem::path& dir);
/// After a barrier over MPI_COMM_WORLD, checks on every rank that neither `dir` nor its
/// temporary directory exists. Collective over MPI_COMM_WORLD.
void expect_no_checkpoint(const std::filesystem::path& dir);

/// Whether `text` contains every one of `parts`.
bool mentions(std::string_view text, std::initializer_list<std::string_view> parts);

/// Runs `fn` and returns the message of the E it throws; records a test failure (at the
/// caller's line) when it throws nothing or another type.
template <class E, class F>
std::string error_of(F&& fn, std::source_location where = std::source_location::current()) {
  try {
    std::forward<F>(fn)();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE_AT(where.file_name(), static_cast<int>(where.line()))
        << "expected " << typeid(E).name() << ", got " << typeid(e).name() << ": " << e.what();
    return {};
  }
  ADD_FAILURE_AT(where.file_name(), static_cast<int>(where.line()))
      << "expected " << typeid(E).name() << ", nothing was thrown";
  return {};
}

/// Whether the test binary runs with CAIRN_TEST_THREAD_LEVEL=funneled.
bool funneled_mode();

/// The world rank on which the environment (CAIRN_FAULT) arms the fault point `point` (-1:
/// every rank), or std::nullopt when it is not armed or the build has no fault points.
std::optional<int> armed_fault_rank(std::string_view point);

}  // namespace cairn::testing
