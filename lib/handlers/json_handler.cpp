// JsonHandler: one JSON value, written by the primary rank, read by it and broadcast.
#include <boost/json.hpp>
#include <cairn/handlers.hpp>
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

std::any JsonHandler::restore(const Comm& comm, const std::filesystem::path& dir,
                              const CheckpointArgs* args) {
  if (args != nullptr && dynamic_cast<const JsonRestore*>(args) == nullptr) {
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
