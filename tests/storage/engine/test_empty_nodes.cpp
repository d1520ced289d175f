// Empty nodes (ArrayTree::add_empty): an empty group and an empty list survive a save and come
// back from restore_tree_as_saved(), read_tree_info() and the handler's metadata, in every format,
// at any rank count and across rank counts; restore_tree() keeps a target's own; the tree refuses
// conflicting paths, a leaf added under one makes it an ordinary group, and the index refuses
// damaged entries.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cairn/error.hpp>
#include <cairn/handlers.hpp>
#include <cairn/storage.hpp>

#include <boost/json.hpp>
#include <map>
#include <string>
#include <vector>

#include "storage/index/tree_index.hpp"
#include "storage/storage_test_util.hpp"
#include "support/test_support.hpp"

namespace cairn::testing {
namespace {

using Nodes = std::map<std::string, EmptyNode, std::less<>>;
const Nodes kNodes = {{"optimizer/state", EmptyNode::group}, {"history", EmptyNode::list}};

ArrayTree tree_with_empty_nodes(std::vector<double>& data, const Comm& comm) {
  const std::vector<std::int64_t> shape = {8, 3};
  const Box box = slab_box(shape, comm.rank(), comm.size());
  data.assign(static_cast<std::size_t>(volume(box)), 2.5);
  ArrayTree tree;
  tree.add_array("optimizer/lr", ArrayShard::host(data.data(), shape, box));
  tree.add_empty("optimizer/state");
  tree.add_empty("history", EmptyNode::list);
  tree.add_scalar("step", Scalar(std::int64_t{3}));
  return tree;
}

TEST(EmptyNodes, SurviveSaveAndRestoreNToM) {
  const SharedTempDir tmp;
  const Comm comm(MPI_COMM_WORLD);
  std::vector<double> data;
  const ArrayTree tree = tree_with_empty_nodes(data, comm);
  for (StorageFormat format : available_formats()) {
    SCOPED_TRACE(std::string(storage_format_name(format)));
    const auto dir = tmp / std::string(storage_format_name(format));
    save_tree(comm, dir, tree, {.format = format});
    EXPECT_EQ(read_tree_info(comm, dir).empty_nodes, kNodes);
    EXPECT_EQ(ArrayTreeHandler().metadata(comm, dir).at("empty_nodes"),
              boost::json::parse(R"([{"path": "history", "kind": "list"},
                                     {"path": "optimizer/state", "kind": "group"}])"));
    for (int m = 1; m <= comm.size(); ++m) {
      auto sub = first_ranks(m);
      if (!sub) continue;
      const ArrayTree back = restore_tree_as_saved(*sub, dir, {.whole_arrays = true});
      EXPECT_EQ(back.empty_nodes(), kNodes) << "restored by " << m << " ranks";
      EXPECT_EQ(back.structure_hash(), tree.structure_hash());
      EXPECT_EQ(back.at("optimizer/lr").as_array().global_shape, (std::vector<std::int64_t>{8, 3}));
      // A selection keeps the empty nodes under it only.
      const ArrayTree part = restore_tree_as_saved(*sub, dir, {.select = {"optimizer"}});
      EXPECT_EQ(part.empty_nodes(), (Nodes{{"optimizer/state", EmptyNode::group}}));
    }
    // Into a target: its empty nodes stay while its values are replaced.
    ArrayTree target;
    target.add_owned_array("optimizer/lr", DType::float64, {8, 3});
    target.add_scalar("step", Scalar(std::int64_t{0}));
    target.add_empty("optimizer/state");
    target.add_empty("history", EmptyNode::list);
    restore_tree(comm, dir, target);
    EXPECT_EQ(target.get<std::int64_t>("step"), 3);
    EXPECT_EQ(target.empty_nodes(), kNodes);
  }
}

TEST(EmptyNodes, TreeRulesAndHash) {
  ArrayTree tree;
  const std::uint64_t bare = tree.structure_hash();
  tree.add_empty("a/b");
  EXPECT_NE(tree.structure_hash(), bare) << "an empty node is part of the structure";
  EXPECT_THROW(tree.add_empty("a/b"), InvalidArgument);
  EXPECT_THROW(tree.add_scalar("a/b", Scalar(1.0)), InvalidArgument);
  EXPECT_THROW(tree.add_scalar("a", Scalar(1.0)), InvalidArgument) << "a leaf above an empty node";
  tree.add_scalar("x", Scalar(1.0));
  EXPECT_THROW(tree.add_empty("x"), InvalidArgument);
  EXPECT_THROW(tree.add_empty("x/y"), InvalidArgument);
  tree.add_scalar("g/leaf", Scalar(1.0));
  EXPECT_THROW(tree.add_empty("g"), InvalidArgument) << "a group of leaves is not empty";
  EXPECT_THROW(tree.add_empty("bad//path"), InvalidArgument);
  // A leaf under an empty node makes it a group.
  tree.add_scalar("a/b/c", Scalar(2.0));
  EXPECT_TRUE(tree.empty_nodes().empty());
  // So does an empty node under it.
  tree.add_empty("list", EmptyNode::list);
  tree.add_empty("list/0");
  EXPECT_EQ(tree.empty_nodes(), (Nodes{{"list/0", EmptyNode::group}}));
  // Without empty nodes, the hash is what it was before they existed.
  ArrayTree plain;
  plain.add_scalar("x", Scalar(1.0));
  ArrayTree copy = plain;
  EXPECT_EQ(copy.structure_hash(), plain.structure_hash());
}

TEST(EmptyNodes, DamagedIndexEntriesAreFormatErrors) {
  storage::TreeIndex index;
  index.world_size = 1;
  storage::LeafRecord scalar;
  scalar.path = "g/n";
  scalar.kind = LeafKind::scalar;
  scalar.value = boost::json::parse(R"({"dtype": "int32", "value": 3})");
  index.leaves.push_back(scalar);
  index.empty_nodes = {{"e", EmptyNode::list}};
  const boost::json::value good = storage::to_json(index);
  EXPECT_EQ(storage::parse_index(boost::json::serialize(good), "t.json").empty_nodes,
            index.empty_nodes);
  const auto with = [&](const char* entries) {
    boost::json::value json = good;
    json.as_object()["empty_nodes"] = boost::json::parse(entries);
    return boost::json::serialize(json);
  };
  for (const char* bad :
       {R"([{"path": "g", "kind": "group"}])", R"([{"path": "g/n", "kind": "group"}])",
        R"([{"path": "../x", "kind": "group"}])", R"([{"path": "e", "kind": "dict"}])",
        R"([{"path": "e", "kind": "list"}, {"path": "e", "kind": "list"}])", R"({"path": "e"})"}) {
    EXPECT_THROW((void)storage::parse_index(with(bad), "t.json"), FormatError) << bad;
  }
}

}  // namespace
}  // namespace cairn::testing
