#include "storage/engine/restore_values.hpp"

#include <boost/json.hpp>

#include <utility>

namespace cairn::storage {
namespace json = boost::json;

void restore_values(const std::filesystem::path& dir, const SavedOf& saved_of, ArrayTree& target) {
  ArrayTree updated;
  for (const Leaf& leaf : target) {
    const auto found = saved_of.find(leaf.path());
    const LeafRecord* saved = found == saved_of.end() ? nullptr : found->second;
    const bool restored = saved != nullptr && saved->kind == leaf.kind();
    switch (leaf.kind()) {
      case LeafKind::array: updated.add_array(leaf.path(), leaf.as_array(), leaf.owner()); break;
      case LeafKind::scalar:
        updated.add_scalar(leaf.path(),
                           restored ? Scalar::from_json(saved->value, dir.string(), leaf.path())
                                    : leaf.as_scalar());
        break;
      case LeafKind::string:
        updated.add_string(leaf.path(),
                           restored ? json::value_to<std::string>(saved->value) : leaf.as_string());
        break;
      case LeafKind::json:
        updated.add_json(leaf.path(), restored ? saved->value : leaf.as_json());
        break;
    }
  }
  for (const auto& [path, kind] : target.empty_nodes()) updated.add_empty(path, kind);
  target = std::move(updated);
}

}  // namespace cairn::storage
