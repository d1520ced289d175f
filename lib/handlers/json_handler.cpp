// JsonHandler: one JSON value, written by the primary rank, read by it and broadcast.
#include <boost/json.hpp>
#include <cairn/handlers.hpp>
#include <cstdint>
#include <fmt/format.h>

#include "base/durable_file.hpp"
#include "base/fault.hpp"
#include "base/first_error.hpp"

namespace cairn {
namespace {

constexpr const char* kValueFile = "value.json";

class JsonPendingSave final : public PendingSave {
 public:
  JsonPendingSave(const Comm& comm, std::filesystem::path dir, boost::json::value value)
      : primary_(comm.is_primary()), dir_(std::move(dir)), value_(std::move(value)) {}

  void stage() override {}  // the value was copied when the save started

  void write(const Comm*) override {
    if (!primary_ || error_.failed()) return;
    try {
      base::fault::point("handler.json_write");
      const std::string text = boost::json::serialize(value_);
      base::write_file_durably(dir_ / kValueFile, text);
      bytes_ = text.size();
    } catch (const std::exception& e) {
      fail(e);
    }
  }

  void finish(const Comm& comm) override { error_.report(comm); }

  std::uint64_t bytes_written() const noexcept override { return bytes_; }

  void fail(const std::exception& error) noexcept override { error_.record(error); }

 private:
  bool primary_;
  std::filesystem::path dir_;
  boost::json::value value_;
  std::uint64_t bytes_ = 0;
  base::FirstError error_;
};

}  // namespace

std::unique_ptr<PendingSave> JsonHandler::async_save(const Comm& comm,
                                                     const std::filesystem::path& dir,
                                                     const CheckpointArgs& args,
                                                     const AsyncContext&) {
  const auto* typed = dynamic_cast<const JsonSave*>(&args);
  if (typed == nullptr) {
    throw InvalidArgument(
        fmt::format("the cairn.json handler cannot take arguments for "
                    "handler '{}'",
                    args.handler_type()));
  }
  comm.agree({.operation = "json save " + dir.filename().string()});
  return std::make_unique<JsonPendingSave>(comm, dir, typed->value);
}

namespace {

std::string kind_name(const boost::json::value& v) {
  switch (v.kind()) {
    case boost::json::kind::null: return "null";
    case boost::json::kind::bool_: return "a bool";
    case boost::json::kind::int64: return "an integer";
    case boost::json::kind::uint64:
      return v.get_uint64() > static_cast<std::uint64_t>(INT64_MAX)
                 ? fmt::format("{}, an integer out of the range of a signed 64-bit integer",
                               v.get_uint64())
                 : std::string("an integer");
    case boost::json::kind::double_: return "a number";
    case boost::json::kind::string: return "a string";
    case boost::json::kind::array: return "an array";
    case boost::json::kind::object: return "an object";
  }
  return "a value";
}

// The kind of `expected`, as kind_name() says it.
std::string expected_name(const boost::json::value& expected) {
  if (expected.is_int64()) return "an integer";
  if (expected.is_uint64()) return "a non-negative integer";
  return kind_name(expected);
}

// Exact kinds: an integer fits an int64 only in its range (boost.json parses a positive
// integer as int64 when it fits, as uint64 only above INT64_MAX), and a uint64 only when not
// negative.
bool same_kind(const boost::json::value& expected, const boost::json::value& got) {
  if (expected.is_double()) return got.is_number();
  if (expected.is_int64()) return got.is_int64();
  if (expected.is_uint64()) return got.is_uint64() || (got.is_int64() && got.get_int64() >= 0);
  return expected.kind() == got.kind();
}

[[noreturn]] void misfit(const std::filesystem::path& file, const std::string& pointer,
                         const std::string& what) {
  const std::string field = pointer.empty() ? "/" : pointer;
  throw FormatError(file.string(), field,
                    fmt::format("'{}': field '{}' {}; the file is damaged or was written by "
                                "another program",
                                file.string(), field, what));
}

// Checks `got` against the shape of `expected` (JsonRestore::expected); `pointer` is the JSON
// pointer of both. Throws FormatError naming `file` and the pointer of the first misfit.
void check_shape(const boost::json::value& expected, const boost::json::value& got,
                 const std::string& pointer, const std::filesystem::path& file) {
  if (expected.is_null()) return;
  if (!same_kind(expected, got)) {
    misfit(file, pointer,
           fmt::format("is {} where {} is expected", kind_name(got), expected_name(expected)));
  }
  if (expected.is_object()) {
    const auto& have = got.get_object();
    for (const auto& [key, value] : expected.get_object()) {
      const std::string inner = pointer + "/" + std::string(key);
      const auto* found = have.if_contains(key);
      if (found == nullptr) misfit(file, inner, "is missing");
      check_shape(value, *found, inner, file);
    }
  } else if (expected.is_array() && expected.get_array().size() == 1) {
    // A list: any length, each element of the one kind.
    const auto& have = got.get_array();
    for (std::size_t i = 0; i < have.size(); ++i) {
      check_shape(expected.get_array().front(), have[i], fmt::format("{}/{}", pointer, i), file);
    }
  } else if (expected.is_array() && expected.get_array().size() > 1) {
    // A tuple: exactly as many elements, each of the kind of the one in its place.
    const auto& want = expected.get_array();
    const auto& have = got.get_array();
    if (have.size() != want.size()) {
      misfit(file, pointer,
             fmt::format("has {} element{} where {} are expected", have.size(),
                         have.size() == 1 ? "" : "s", want.size()));
    }
    for (std::size_t i = 0; i < have.size(); ++i) {
      check_shape(want[i], have[i], fmt::format("{}/{}", pointer, i), file);
    }
  }
}

}  // namespace

std::any JsonHandler::restore(const Comm& comm, const std::filesystem::path& dir,
                              const CheckpointArgs* args) {
  const auto* typed = dynamic_cast<const JsonRestore*>(args);
  if (args != nullptr && typed == nullptr) {
    throw InvalidArgument(
        fmt::format("the cairn.json handler cannot take arguments for "
                    "handler '{}'",
                    args->handler_type()));
  }
  const auto file = dir / kValueFile;
  std::string text;
  comm.run_all(fmt::format("reading '{}':", file.string()), [&] {
    if (comm.is_primary()) text = base::read_small_file(file);
  });
  text = comm.broadcast(text);
  boost::system::error_code ec;
  boost::json::parse_options options;
  options.max_depth = 256;
  boost::json::value value = boost::json::parse(text, ec, {}, options);
  if (ec) {
    throw FormatError(file.string(), "json",
                      fmt::format("'{}' is not valid JSON ({}); the file is damaged", file.string(),
                                  ec.message()));
  }
  // Every rank holds the same value, so every rank throws alike.
  if (typed != nullptr) check_shape(typed->expected, value, "", file);
  return value;
}

boost::json::value JsonHandler::metadata(const Comm& comm, const std::filesystem::path& dir) {
  const auto file = dir / kValueFile;
  std::int64_t bytes = 0;
  comm.run_all(fmt::format("reading '{}':", file.string()), [&] {
    if (comm.is_primary()) bytes = static_cast<std::int64_t>(std::filesystem::file_size(file));
  });
  return {{"handler", type_name()}, {"bytes", comm.broadcast_json(bytes).as_int64()}};
}

}  // namespace cairn
