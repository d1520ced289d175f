#include "checkpoint/commit.hpp"

#include <boost/json.hpp>
#include <cairn/checkpointer.hpp>
#include <ctime>
#include <fmt/chrono.h>
#include <fmt/format.h>

#include "base/durable_file.hpp"
#include "base/fault.hpp"
#include "base/fnv1a.hpp"
#include "base/log.hpp"
#include "base/posix_file.hpp"
#include "checkpoint/file_options.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/step_metadata.hpp"

namespace cairn::checkpoint {
namespace {

std::string iso_time(std::chrono::system_clock::time_point t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(seconds));
}

std::filesystem::path with_suffix(const std::filesystem::path& dir, std::string_view suffix) {
  std::filesystem::path out = dir;
  out += suffix;
  return out;
}

std::filesystem::path parent_of(const std::filesystem::path& dir) {
  const auto parent = dir.parent_path();
  return parent.empty() ? std::filesystem::path(".") : parent;
}

// A forced save replaces a checkpoint and nothing else: not a root of several, not a
// directory of other files, not what a symbolic link points to.
void require_replaceable(const std::filesystem::path& dir) {
  std::error_code ec;
  const auto status = std::filesystem::symlink_status(dir, ec);
  if (!std::filesystem::is_symlink(status) && is_checkpoint_directory(dir)) return;
  const char* what =
      std::filesystem::is_symlink(status)      ? "a symbolic link"
      : !std::filesystem::is_directory(status) ? "a file"
      : looks_like_checkpoint_directory(dir)
          ? "a directory that is not a cairn checkpoint (its COMMITTED or cairn-step.json is "
            "not one cairn wrote, or names files that are missing)"
          : "a directory that is not a cairn checkpoint (it holds neither cairn-step.json nor "
            "COMMITTED)";
  throw InvalidArgument(
      fmt::format("'{}' is {}: force replaces only a checkpoint, so nothing was changed; remove "
                  "it yourself or save elsewhere",
                  dir.string(), what));
}

}  // namespace

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::filesystem::path begin_save(const Comm& comm, const std::filesystem::path& dir, bool force,
                                 std::string_view handler_type) {
  if (dir.empty() || !dir.has_filename()) {
    throw InvalidArgument(
        fmt::format("checkpoint path '{}' has no final component; name the "
                    "checkpoint directory, without a trailing '/'",
                    dir.string()));
  }
  comm.agree({.operation = "checkpoint save",
              .options = force ? 1u : 0u,
              .structure = base::Fnv1a().str(dir.string()).str(handler_type).value()});
  const auto tmp = with_suffix(dir, kTmpSuffix);
  comm.run_all(fmt::format("saving checkpoint '{}':", dir.string()), [&] {
    if (!comm.is_primary()) return;
    std::error_code ec;
    if (std::filesystem::exists(std::filesystem::symlink_status(dir, ec))) {
      if (!force) {
        throw InvalidArgument(
            fmt::format("checkpoint '{}' already exists{}; pass force = true to replace it",
                        dir.string(), is_committed(dir) ? "" : " (incomplete)"));
      }
      require_replaceable(dir);
    }
    if (std::filesystem::exists(tmp, ec)) {
      base::log::info("checkpoint.stale_tmp", "path=\"{}\"", tmp.string());
      std::filesystem::remove_all(tmp, ec);
      if (ec) {
        throw IoError(tmp.string(), fmt::format("removing the stale '{}' failed: {}", tmp.string(),
                                                ec.message()));
      }
    }
    base::create_directories(tmp);
  });
  base::fault::point("checkpoint.before_data");
  return tmp;
}

void commit(const Comm& comm, const std::filesystem::path& tmp, const std::filesystem::path& dir,
            StepRecord record, bool force, const FileOptions& files) {
  const auto start = std::chrono::steady_clock::now();
  base::fault::point("checkpoint.before_metadata");
  comm.run_all(fmt::format("committing checkpoint '{}':", dir.string()), [&] {
    if (!comm.is_primary()) return;
    const auto committed_at = std::chrono::system_clock::now();
    record.timings["commit_s"] = seconds_since(start);
    boost::json::object step;
    step[step_key::kFormat] = kStepFormatName;
    step[step_key::kVersion] = kStepFormatVersion;
    step[step_key::kHandler] = record.handler_type;
    step[step_key::kWorldSize] = comm.size();
    step[step_key::kBytes] = record.bytes;
    step[step_key::kInitTime] = iso_time(record.started);
    step[step_key::kCommitTime] = iso_time(committed_at);
    step[step_key::kTimings] = record.timings;
    step[step_key::kCustom] = record.custom;
    for (const auto& [key, value] : record.item_metadata) step[key] = value;
    base::write_file_durably(tmp / kStepMetadataFile, boost::json::serialize(step));
    base::write_file_durably(tmp / kCommitMarker, make_commit_marker(tmp, iso_time(committed_at)));
    base::sync_directory(tmp);
    apply_file_options(tmp, files);

    base::fault::point("checkpoint.before_rename");
    std::error_code ec;
    const auto old = with_suffix(dir, ".cairn-old");
    const bool replacing =
        force && std::filesystem::exists(std::filesystem::symlink_status(dir, ec));
    if (replacing) {
      // Checked again: the path may have changed since the save began.
      require_replaceable(dir);
      if (std::filesystem::exists(std::filesystem::symlink_status(old, ec))) {
        require_replaceable(old);
        std::filesystem::remove_all(old, ec);
      }
      std::filesystem::rename(dir, old, ec);
      if (ec) {
        throw IoError(dir.string(), fmt::format("moving the old '{}' aside failed: {}",
                                                dir.string(), ec.message()));
      }
    }
    std::filesystem::rename(tmp, dir, ec);
    if (ec) {
      std::string restored;
      if (replacing) {
        std::error_code back;
        std::filesystem::rename(old, dir, back);
        restored = back ? fmt::format("; the old checkpoint stays at '{}' ({})", old.string(),
                                      back.message())
                        : "; the old checkpoint is back in place";
      }
      throw IoError(dir.string(), fmt::format("renaming '{}' to '{}' failed: {}{}", tmp.string(),
                                              dir.string(), ec.message(), restored));
    }
    base::sync_directory(parent_of(dir));
    base::fault::point("checkpoint.after_rename");
    if (replacing) std::filesystem::remove_all(old, ec);
    base::log::info("checkpoint.commit", "path=\"{}\" bytes={}", dir.string(), record.bytes);
  });
}

void discard(const Comm& comm, const std::filesystem::path& tmp) noexcept {
  if (!comm.is_primary()) return;
  std::error_code ec;
  std::filesystem::remove_all(tmp, ec);
  if (ec)
    base::log::warn("checkpoint.discard", "path=\"{}\" error=\"{}\"", tmp.string(), ec.message());
}

StepMetadata open_committed(const Comm& comm, const std::filesystem::path& dir,
                            const CheckpointArgs* args) {
  const auto file = dir / kStepMetadataFile;
  const std::optional<std::set<std::string>> only_items =
      args != nullptr ? args->item_names() : std::nullopt;
  std::string text;
  comm.run_all(fmt::format("opening checkpoint '{}':", dir.string()), [&] {
    if (!comm.is_primary()) return;
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) {
      throw NotFound(dir.string(), fmt::format("checkpoint '{}' does not exist", dir.string()));
    }
    if (!std::filesystem::exists(dir / kCommitMarker, ec)) {
      throw FormatError(dir.string(), kCommitMarker,
                        fmt::format("checkpoint '{}' is incomplete: it has no {} marker, so its "
                                    "save did not finish; restore an earlier checkpoint",
                                    dir.string(), kCommitMarker));
    }
    base::require_no_link_out(dir);  // item directories, data and metadata files
    verify_commit_marker(dir, only_items);
    text = base::read_small_file(file);
  });
  return parse_step_metadata(comm.broadcast(text), file);
}

}  // namespace cairn::checkpoint
