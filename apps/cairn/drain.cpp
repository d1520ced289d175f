// cairn drain ROOT --local-dir DIR: after the job has ended, write the newest step that its
// node-local level holds to the root (SCR's scavenge).
#include <boost/json.hpp>
#include <cairn/comm.hpp>
#include <cairn/levels.hpp>
#include <cairn/manager.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "commands.hpp"

namespace cairn_tool {

int run_drain(const cairn::Comm& comm, const DrainOptions& options, JsonStream& json) {
  const std::filesystem::path root = options.root;
  const std::string missing = on_primary(comm, [&] {
    std::error_code ec;
    return std::filesystem::is_directory(root, ec)
               ? std::string()
               : fmt::format("'{}' is not a directory: give the job's checkpoint root",
                             root.string());
  });
  if (!missing.empty()) throw CommandError(missing);
  const cairn::LevelDrain drained = cairn::drain_local_level(
      comm, root,
      cairn::LocalLevelOptions{.directory = options.local_dir,
                               .redundancy = cairn::LocalRedundancy::parse(options.redundancy),
                               .ranks_per_node = options.ranks_per_node});
  const int code = drained.failed ? kFound : kOk;
  if (!comm.is_primary()) return code;
  if (options.json) {
    boost::json::array rebuilt;
    for (const int node : drained.rebuilt_nodes) rebuilt.emplace_back(node);
    json.document(boost::json::object{
        {"root", root.string()},
        {"local_dir", options.local_dir},
        {"drained", drained.step >= 0 ? boost::json::value(drained.step) : nullptr},
        {"newest_local",
         drained.newest_local >= 0 ? boost::json::value(drained.newest_local) : nullptr},
        {"newest_persistent",
         drained.newest_persistent >= 0 ? boost::json::value(drained.newest_persistent) : nullptr},
        {"rebuilt_nodes", std::move(rebuilt)},
        {"why_not", drained.why_not},
        {"failed", drained.failed},
        {"exit_code", code}});
    return code;
  }
  if (drained.step >= 0) {
    std::string rebuilt;
    for (const int node : drained.rebuilt_nodes) {
      rebuilt += fmt::format("{}{}", rebuilt.empty() ? "" : ", ", node);
    }
    std::printf("drained step %lld to %s%s%s%s\n", static_cast<long long>(drained.step),
                root.string().c_str(), rebuilt.empty() ? "" : " (rebuilt node ", rebuilt.c_str(),
                rebuilt.empty() ? "" : " from its copies)");
  } else if (drained.failed) {
    std::printf("could not drain: %s\n", drained.why_not.c_str());
  } else {
    std::printf("nothing to drain: %s\n", drained.why_not.c_str());
  }
  return code;
}

}  // namespace cairn_tool
