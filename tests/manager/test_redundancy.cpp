// The redundancy codec of the node-local checkpoint level: a node's part of a step packed into
// one archive and unpacked again bit for bit (hostile archives are refused, nothing written),
// and the partner and xor parity schemes over node leaders (here: every rank of MPI_COMM_WORLD
// is the leader of one node), which rebuild the archive of each lost node bit for bit, recompute
// lost redundancy files equal to the originals, and say alike on every node why a loss cannot
// be repaired.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cairn/comm.hpp>
#include <cairn/error.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "base/packed.hpp"
#include "manager/levels/redundancy.hpp"
#include "manager/levels/step_archive.hpp"
#include "support/test_support.hpp"

using namespace cairn;
using namespace cairn::levels;
using cairn::testing::SharedTempDir;

namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::byte>;
using namespace std::chrono_literals;

Comm make_leaders() { return Comm(MPI_COMM_WORLD, {.barrier_timeout = 60s}); }

void write_file(const fs::path& path, std::string_view text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A directory of this rank under the shared temporary directory.
fs::path rank_dir(const SharedTempDir& tmp, std::string_view name) {
  return tmp / (std::string(name) + "-rank" + std::to_string(cairn::testing::world_rank()));
}

// A node's part of a step: nested directories, an empty file, a binary file.
void fill_step(const fs::path& dir) {
  write_file(dir / "cairn-step.json", R"({"step": 7})");
  write_file(dir / "items/state/shard-0.bin", std::string("\0\1\2\xff binary", 11));
  write_file(dir / "items/state/empty", "");
  write_file(dir / "items/deep/a/b/c/d.txt", std::string(70000, 'x'));
  write_file(dir / "z-last", "last");
}

// An archive made by hand: `files` as (path, bytes), with correct checksums unless told.
Bytes craft(const std::vector<std::pair<std::string, std::string>>& files,
            std::uint64_t version = 1) {
  base::Packed out;
  const std::string_view magic = "CAIRNARC";
  for (const char c : magic) out.put_byte(static_cast<std::uint8_t>(c));
  out.put(version);
  out.put(static_cast<std::uint64_t>(files.size()));
  for (const auto& [path, bytes] : files) {
    const auto data = std::as_bytes(std::span(bytes));
    out.put(path);
    out.put(static_cast<std::uint64_t>(data.size()));
    out.put_all(std::array<std::uint64_t, 1>{archive_checksum(data)});
    out.bytes().insert(out.bytes().end(), data.begin(), data.end());
  }
  return std::move(out.bytes());
}

// A directory of this process for the redundancy files the tests write, removed at exit.
const fs::path& scratch() {
  static const struct Dir {
    fs::path path =
        fs::temp_directory_path() / ("cairn-test-redundancy-" + std::to_string(::getpid()));
    Dir() { fs::create_directories(path); }
    ~Dir() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } dir;
  return dir.path;
}

Bytes read_bytes(const fs::path& path) {
  const std::string text = read_file(path);
  const auto bytes = std::as_bytes(std::span(text));
  return {bytes.begin(), bytes.end()};
}

// The archive of `dir` laid out in memory; its checksum is the one map_directory() computed.
Bytes pack(const fs::path& dir) {
  const ArchiveBytes mapped = map_directory(dir);
  Bytes out(mapped.size());
  mapped.copy(0, out);
  EXPECT_EQ(archive_checksum(out), mapped.checksum()) << dir;
  return out;
}

// The step and run the tests' redundancy files are made for.
const Binding kBinding{.step = 7, .source = 0x5eed};

// The redundancy file encode() writes for `archive` (empty when it writes none).
Bytes encode(const Comm& leaders, const Redundancy& scheme, const Bytes& archive,
             const Binding& binding = kBinding) {
  const auto file = scratch() / "encoded";
  fs::remove(file);
  encode_redundancy(leaders, scheme, binding, ArchiveBytes(archive), file);
  EXPECT_FALSE(fs::exists(file.string() + ".cairn-tmp"));
  return fs::exists(file) ? read_bytes(file) : Bytes();
}

// rebuild_lost()'s outcome with the redundancy file it wrote, read back.
struct Outcome : RebuildOutcome {
  std::optional<Bytes> redundancy;
};

Outcome rebuild_with(const Comm& leaders, const Redundancy& scheme, const ArchiveBytes* archive,
                     std::optional<std::uint64_t> checksum,
                     std::optional<std::span<const std::byte>> redundancy,
                     const Binding& binding = kBinding) {
  const auto file = scratch() / "rebuilt";
  fs::remove(file);
  Outcome out{rebuild_lost(leaders, scheme, binding, archive, checksum, redundancy, file),
              std::nullopt};
  EXPECT_EQ(out.redundancy_rewritten, fs::exists(file));
  if (fs::exists(file)) out.redundancy = read_bytes(file);
  return out;
}

// Unpacking `archive` into a fresh directory throws FormatError and writes nothing.
void expect_refused(const Bytes& archive, const fs::path& dir, std::string_view says) {
  try {
    unpack_directory(archive, dir);
    ADD_FAILURE() << "an archive that should be refused (" << says << ") was unpacked";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_FALSE(fs::exists(fs::path(dir.string() + ".cairn-tmp")));
}

// ---- archives -------------------------------------------------------------------------------

TEST(StepArchive, RoundTripKeepsNestedDirectoriesAndEmptyFiles) {
  SharedTempDir tmp;
  const auto source = rank_dir(tmp, "source");
  fill_step(source);
  const Bytes archive = pack(source);
  EXPECT_EQ(pack(source), archive) << "packing is not deterministic";

  const auto restored = rank_dir(tmp, "restored");
  unpack_directory(archive, restored);
  for (const char* name : {"cairn-step.json", "items/state/shard-0.bin", "items/state/empty",
                           "items/deep/a/b/c/d.txt", "z-last"}) {
    ASSERT_TRUE(fs::is_regular_file(restored / name)) << name;
    EXPECT_EQ(read_file(restored / name), read_file(source / name)) << name;
  }
  EXPECT_EQ(fs::file_size(restored / "items/state/empty"), 0u);
  EXPECT_EQ(pack(restored), archive);
  EXPECT_FALSE(fs::exists(fs::path(restored.string() + ".cairn-tmp")));
}

TEST(StepArchive, EmptyDirectoryAndStaleTemporary) {
  SharedTempDir tmp;
  const auto source = rank_dir(tmp, "empty");
  fs::create_directories(source);
  const Bytes archive = pack(source);
  const auto restored = rank_dir(tmp, "restored");
  write_file(restored.string() + ".cairn-tmp/leftover", "from a crash");
  unpack_directory(archive, restored);
  EXPECT_TRUE(fs::is_directory(restored));
  EXPECT_TRUE(fs::is_empty(restored));
  EXPECT_FALSE(fs::exists(restored.string() + ".cairn-tmp"));
  EXPECT_THROW(unpack_directory(archive, restored), InvalidArgument);
  EXPECT_THROW((void)pack(rank_dir(tmp, "missing")), NotFound);
}

TEST(StepArchive, RefusesLinksAndSpecialFiles) {
  SharedTempDir tmp;
  const auto dir = rank_dir(tmp, "links");
  fill_step(dir);
  fs::create_symlink(dir / "z-last", dir / "items/link");
  try {
    (void)pack(dir);
    ADD_FAILURE() << "a symbolic link was packed";
  } catch (const IoError& e) {
    EXPECT_EQ(e.path(), (dir / "items/link").string());
  }
  fs::remove(dir / "items/link");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  try {
    (void)pack(dir);
    ADD_FAILURE() << "a FIFO was packed";
  } catch (const IoError& e) {
    EXPECT_EQ(e.path(), (dir / "fifo").string());
  }
}

TEST(StepArchive, HostileArchivesAreFormatErrors) {
  SharedTempDir tmp;
  const auto source = rank_dir(tmp, "source");
  fill_step(source);
  const Bytes good = pack(source);
  const auto target = rank_dir(tmp, "target");

  for (std::size_t size = 0; size < good.size(); size += std::max<std::size_t>(1, size / 8)) {
    expect_refused(Bytes(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(size)), target,
                   "damaged");
  }
  Bytes flipped = good;
  flipped[good.size() - 2] ^= std::byte{0x01};  // a byte of the last file
  expect_refused(flipped, target, "do not match their XXH3 checksum");
  Bytes longer = good;
  longer.push_back(std::byte{0});
  expect_refused(longer, target, "follow the last file");
  Bytes magic = good;
  magic[0] = std::byte{'X'};
  expect_refused(magic, target, "CAIRNARC");

  expect_refused(craft({{"../escape", "x"}}), target, "'..'");
  expect_refused(craft({{"a/../../escape", "x"}}), target, "'..'");
  expect_refused(craft({{"/etc/escape", "x"}}), target, "absolute");
  expect_refused(craft({{"a//b", "x"}}), target, "empty");
  expect_refused(craft({{"./a", "x"}}), target, "'.'");
  expect_refused(craft({{"", "x"}}), target, "empty path");
  expect_refused(craft({{std::string("a\0b", 3), "x"}}), target, "NUL");
  expect_refused(craft({{"a", "x"}, {"a", "y"}}), target, "twice");
  expect_refused(craft({{"a", "x"}, {"a/b", "y"}}), target, "both a file and a directory");
  expect_refused(craft({{"a", "x"}}, 2), target, "version");
  // Counts and sizes far beyond the bytes there are.
  base::Packed huge;
  for (const char c : std::string_view("CAIRNARC")) huge.put_byte(static_cast<std::uint8_t>(c));
  huge.put(std::uint64_t{1});
  huge.put(~std::uint64_t{0});
  expect_refused(huge.bytes(), target, "cannot fit");
  base::Packed big_file;
  for (const char c : std::string_view("CAIRNARC")) big_file.put_byte(static_cast<std::uint8_t>(c));
  big_file.put(std::uint64_t{1});
  big_file.put(std::uint64_t{1});
  big_file.put(std::string_view("a"));
  big_file.put(~std::uint64_t{0});
  big_file.put_all(std::array<std::uint64_t, 1>{0});
  expect_refused(big_file.bytes(), target, "are expected");
}

TEST(StepArchive, RandomDamageNeverCrashes) {
  SharedTempDir tmp;
  const auto source = rank_dir(tmp, "source");
  fill_step(source);
  const Bytes good = pack(source);
  std::mt19937_64 random(42 + static_cast<unsigned>(cairn::testing::world_rank()));
  for (int round = 0; round < 200; ++round) {
    Bytes damaged = good;
    for (int k = 0; k < 1 + round % 4; ++k) {
      damaged[random() % damaged.size()] = static_cast<std::byte>(random());
    }
    const auto target = rank_dir(tmp, "fuzz-" + std::to_string(round));
    try {
      unpack_directory(damaged, target);  // a changed path may still be a valid archive
    } catch (const FormatError&) {
      EXPECT_FALSE(fs::exists(target));
    }
  }
}

// ---- redundancy -----------------------------------------------------------------------------

// The archive of `node`: sizes differ from node to node, one is empty.
Bytes archive_of(int node, std::size_t size) {
  Bytes out(size);
  std::mt19937_64 random(1000 + static_cast<unsigned>(node));
  for (auto& b : out) b = static_cast<std::byte>(random());
  return out;
}

std::size_t size_of(int node) {
  constexpr std::array<std::size_t, 5> kSizes = {5000, 12347, 0, 7777, 301};
  return kSizes[static_cast<std::size_t>(node) % kSizes.size()];
}

// The xor group of `node` as the layout defines it: consecutive ids in groups of `g`, a last
// group of one joining the one before.
struct TestGroup {
  int first = 0;
  int size = 0;
};
TestGroup xor_group_of(int node, int nodes, int g) {
  const int groups = std::max(1, nodes / g + (nodes % g >= 2 ? 1 : 0));
  const int index = std::min(node / g, groups - 1);
  return {index * g, index == groups - 1 ? nodes - index * g : g};
}

// What one node passes to rebuild_lost() when it lost its archive, its redundancy file, or both.
struct Loss {
  bool archive = false;
  bool redundancy = false;
};

Outcome rebuild(const Comm& leaders, const Redundancy& scheme, const Bytes& archive,
                const Bytes& redundancy, Loss loss) {
  const ArchiveBytes mine(archive);
  return rebuild_with(
      leaders, scheme, loss.archive ? nullptr : &mine, archive_checksum(archive),
      loss.redundancy ? std::nullopt : std::optional<std::span<const std::byte>>(redundancy));
}

// The same on every rank.
void expect_alike(const Comm& leaders, const std::string& text) {
  for (const auto& other : leaders.allgather(text)) EXPECT_EQ(other, text);
}

// Loses each node in turn (archive and redundancy file) and checks that its archive is rebuilt
// bit for bit and its redundancy file recomputed equal to the one it had.
void lose_each_node(const Comm& leaders, const Redundancy& scheme, const Bytes& archive,
                    const Bytes& redundancy) {
  for (int lost = 0; lost < leaders.size(); ++lost) {
    const bool me = leaders.rank() == lost;
    const auto outcome = rebuild(leaders, scheme, archive, redundancy, {me, me});
    ASSERT_TRUE(outcome.recoverable) << outcome.why;
    EXPECT_EQ(outcome.rebuilt_nodes, std::vector<int>{lost});
    ASSERT_EQ(outcome.archive.has_value(), me);
    ASSERT_EQ(outcome.redundancy.has_value(), me);
    if (me) {
      EXPECT_TRUE(*outcome.archive == archive) << "node " << lost << " rebuilt other bytes";
      EXPECT_TRUE(*outcome.redundancy == redundancy) << "node " << lost;
    }
  }
}

// Loses only the redundancy file of each node in turn: recomputed equal, nothing rebuilt.
void lose_each_redundancy(const Comm& leaders, const Redundancy& scheme, const Bytes& archive,
                          const Bytes& redundancy) {
  for (int lost = 0; lost < leaders.size(); ++lost) {
    const bool me = leaders.rank() == lost;
    const auto outcome = rebuild(leaders, scheme, archive, redundancy, {false, me});
    ASSERT_TRUE(outcome.recoverable) << outcome.why;
    EXPECT_TRUE(outcome.rebuilt_nodes.empty());
    EXPECT_FALSE(outcome.archive.has_value());
    ASSERT_EQ(outcome.redundancy.has_value(), me);
    if (me) {
      EXPECT_TRUE(*outcome.redundancy == redundancy) << "node " << lost;
    }
  }
}

TEST(StepArchive, ArchiveBytesReadAcrossTheirRanges) {
  const Bytes whole = archive_of(3, 1000);
  const std::span<const std::byte> all(whole);
  const ArchiveBytes parts({all.first(10), all.subspan(10, 0), all.subspan(10, 590), all.last(400)},
                           nullptr, archive_checksum(whole));
  EXPECT_EQ(parts.size(), whole.size());
  EXPECT_EQ(parts.parts().size(), 3u) << "an empty range is dropped";
  EXPECT_EQ(ArchiveBytes(whole).checksum(), archive_checksum(whole));
  for (const std::uint64_t offset : {0u, 5u, 10u, 599u, 600u, 999u, 1000u, 1500u}) {
    Bytes out(300, std::byte{0xaa});
    parts.copy(offset, out);
    for (std::size_t k = 0; k < out.size(); ++k) {
      const std::uint64_t at = offset + k;
      ASSERT_EQ(out[k], at < whole.size() ? whole[at] : std::byte{0})
          << "offset " << offset << " byte " << k;
    }
  }
}

TEST(Redundancy, NoneKeepsNothingAndRepairsNothing) {
  const Comm leaders = make_leaders();
  const Redundancy none{};
  const Bytes archive = archive_of(leaders.rank(), size_of(leaders.rank()));
  EXPECT_TRUE(encode(leaders, none, archive).empty());
  EXPECT_TRUE(rebuild(leaders, none, archive, {}, {false, true}).recoverable);
  const auto outcome = rebuild(leaders, none, archive, {}, {leaders.rank() == 0, true});
  EXPECT_FALSE(outcome.recoverable);
  EXPECT_EQ(outcome.why, "node 0 is lost and the redundancy scheme is none");
}

TEST(Redundancy, PartnerRebuildsEveryLostNodeBitForBit) {
  const Comm leaders = make_leaders();
  const Bytes archive = archive_of(leaders.rank(), size_of(leaders.rank()));
  if (leaders.size() == 1) {
    try {
      (void)encode(leaders, {.kind = RedundancyKind::partner}, archive);
      ADD_FAILURE() << "partner over one node was accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("partner needs at least 2 nodes"), std::string::npos);
    }
    return;
  }
  for (const int d : {1, leaders.size() - 1}) {
    const Redundancy scheme{.kind = RedundancyKind::partner, .partner_distance = d};
    const Bytes redundancy = encode(leaders, scheme, archive);
    // The file holds the archive of node (n - d) mod N, and little else.
    const int source = (leaders.rank() - d + leaders.size()) % leaders.size();
    EXPECT_GE(redundancy.size(), size_of(source));
    EXPECT_LE(redundancy.size(), size_of(source) + 128);
    lose_each_node(leaders, scheme, archive, redundancy);
    lose_each_redundancy(leaders, scheme, archive, redundancy);
  }
}

TEST(Redundancy, XorRebuildsEveryLostNodeBitForBit) {
  const Comm leaders = make_leaders();
  const Bytes archive = archive_of(leaders.rank(), size_of(leaders.rank()));
  if (leaders.size() == 1) {
    EXPECT_THROW((void)encode(leaders, {.kind = RedundancyKind::xor_parity}, archive),
                 InvalidArgument);
    return;
  }
  // Over 4 nodes: groups {0,1},{2,3}; one group of 4 (3 + the merged last node); one of 4.
  for (const int g : {2, 3, 4}) {
    SCOPED_TRACE("xor_group " + std::to_string(g));
    const Redundancy scheme{.kind = RedundancyKind::xor_parity, .xor_group = g};
    const Bytes redundancy = encode(leaders, scheme, archive);
    lose_each_node(leaders, scheme, archive, redundancy);
    lose_each_redundancy(leaders, scheme, archive, redundancy);
  }
}

// The payload of member k of a group of m is the XOR over the other members i of their chunk
// (k - i - 1) mod m, every archive padded with zeros to the group's largest, rounded up to a
// multiple of m - 1; groups are consecutive ids and a last group of one joins the one before.
TEST(Redundancy, XorParityHoldsTheChunksOfTheLayout) {
  const Comm leaders = make_leaders();
  if (leaders.size() == 1) GTEST_SKIP() << "xor parity needs 2 nodes";
  const int nodes = leaders.size();
  const int me = leaders.rank();
  const Bytes archive = archive_of(me, size_of(me));
  for (const int g : {2, 3, 4}) {
    SCOPED_TRACE("xor_group " + std::to_string(g));
    const Bytes parity =
        encode(leaders, {.kind = RedundancyKind::xor_parity, .xor_group = g}, archive);
    const auto [first, m] = xor_group_of(me, nodes, g);
    std::size_t largest = 0;
    for (int i = 0; i < m; ++i) largest = std::max(largest, size_of(first + i));
    const std::size_t chunk = (largest + static_cast<std::size_t>(m) - 2) / (m - 1);
    Bytes expected(chunk);
    const int k = me - first;
    for (int i = 0; i < m; ++i) {
      if (i == k) continue;
      const Bytes other = archive_of(first + i, size_of(first + i));
      const auto c = static_cast<std::size_t>(((k - i - 1) % m + m) % m);
      for (std::size_t b = 0; b < chunk && c * chunk + b < other.size(); ++b) {
        expected[b] ^= other[c * chunk + b];
      }
    }
    ASSERT_GE(parity.size(), chunk);
    EXPECT_TRUE(std::equal(expected.begin(), expected.end(),
                           parity.end() - static_cast<std::ptrdiff_t>(chunk)));
  }
}

TEST(Redundancy, XorRebuildsOneNodeInEachGroupAtOnce) {
  const Comm leaders = make_leaders();
  if (leaders.size() < 4) GTEST_SKIP() << "needs two xor groups of 2, so 4 nodes";
  const Redundancy scheme{.kind = RedundancyKind::xor_parity, .xor_group = 2};
  const Bytes archive = archive_of(leaders.rank(), size_of(leaders.rank()));
  const Bytes redundancy = encode(leaders, scheme, archive);
  const bool lost = leaders.rank() == 0 || leaders.rank() == 3;
  const auto outcome = rebuild(leaders, scheme, archive, redundancy, {lost, lost});
  ASSERT_TRUE(outcome.recoverable) << outcome.why;
  EXPECT_EQ(outcome.rebuilt_nodes, (std::vector<int>{0, 3}));
  if (lost) {
    EXPECT_TRUE(outcome.archive && *outcome.archive == archive);
    EXPECT_TRUE(outcome.redundancy && *outcome.redundancy == redundancy);
  }
}

TEST(Redundancy, EmptyArchivesEverywhere) {
  const Comm leaders = make_leaders();
  if (leaders.size() == 1) GTEST_SKIP() << "partner and xor parity need 2 nodes";
  for (const Redundancy scheme : {Redundancy{.kind = RedundancyKind::partner},
                                  Redundancy{.kind = RedundancyKind::xor_parity}}) {
    const Bytes redundancy = encode(leaders, scheme, {});
    lose_each_node(leaders, scheme, {}, redundancy);
  }
}

TEST(Redundancy, XorWithGroupsOfFourStoresAThirdOfTheData) {
  const Comm leaders = make_leaders();
  if (leaders.size() == 1) GTEST_SKIP() << "xor parity needs 2 nodes";
  constexpr std::size_t kBytes = 300000;
  const Bytes archive = archive_of(leaders.rank(), kBytes);
  const Redundancy scheme{.kind = RedundancyKind::xor_parity, .xor_group = 4};
  const Bytes redundancy = encode(leaders, scheme, archive);
  // A node of a group of m stores 1 / (m - 1) of an archive, plus a header: a third at m = 4.
  double expected = 0;
  for (int n = 0; n < leaders.size(); ++n) {
    expected += 1.0 / (xor_group_of(n, leaders.size(), 4).size - 1) / leaders.size();
  }
  const double ratio =
      static_cast<double>(leaders.sum(static_cast<std::int64_t>(redundancy.size()))) /
      static_cast<double>(leaders.size() * kBytes);
  EXPECT_NEAR(ratio, expected, 0.002);
  if (leaders.size() == 4) {
    EXPECT_NEAR(ratio, 1.0 / 3, 0.002);
  }
}

TEST(Redundancy, DamagedOrMisattributedInputsCountAsLost) {
  const Comm leaders = make_leaders();
  if (leaders.size() == 1) GTEST_SKIP() << "partner needs 2 nodes";
  const Redundancy scheme{.kind = RedundancyKind::partner};
  const Bytes archive = archive_of(leaders.rank(), size_of(leaders.rank()));
  const Bytes redundancy = encode(leaders, scheme, archive);
  const int last = leaders.size() - 1;
  // A flipped byte in node 0's redundancy file: recomputed.
  Bytes damaged = redundancy;
  if (leaders.rank() == 0 && !damaged.empty()) damaged.back() ^= std::byte{0x80};
  auto outcome = rebuild(leaders, scheme, archive, damaged, {});
  ASSERT_TRUE(outcome.recoverable) << outcome.why;
  ASSERT_EQ(outcome.redundancy.has_value(), leaders.rank() == 0);
  if (leaders.rank() == 0) {
    EXPECT_TRUE(*outcome.redundancy == redundancy);
  }
  // An archive that does not match what its node recorded: rebuilt.
  Bytes wrong = archive;
  wrong.push_back(std::byte{7});
  const ArchiveBytes mine(leaders.rank() == last ? wrong : archive);
  outcome = rebuild_with(leaders, scheme, &mine, archive_checksum(archive),
                         std::span<const std::byte>(redundancy));
  ASSERT_TRUE(outcome.recoverable) << outcome.why;
  EXPECT_EQ(outcome.rebuilt_nodes, std::vector<int>{last});
  if (leaders.rank() == last) {
    EXPECT_TRUE(outcome.archive && *outcome.archive == archive);
  }
  // Another node's redundancy file passed on node 0: it is not node 0's, so it counts as lost.
  const auto all = leaders.allgather_bytes(redundancy);
  const ArchiveBytes intact(archive);
  outcome = rebuild_with(leaders, scheme, &intact, archive_checksum(archive),
                         std::span<const std::byte>(all[leaders.rank() == 0 ? 1 : leaders.rank()]));
  ASSERT_TRUE(outcome.recoverable) << outcome.why;
  ASSERT_EQ(outcome.redundancy.has_value(), leaders.rank() == 0);
  if (leaders.rank() == 0) {
    EXPECT_TRUE(*outcome.redundancy == redundancy);
  }
}

TEST(Redundancy, ACopyOfAnotherStepRunOrArchiveIsNeverUsed) {
  const Comm leaders = make_leaders();
  if (leaders.size() == 1) GTEST_SKIP() << "partner needs 2 nodes";
  const Redundancy scheme{.kind = RedundancyKind::partner};
  const Bytes archive = archive_of(leaders.rank(), size_of(leaders.rank()));
  const Bytes redundancy = encode(leaders, scheme, archive);
  const int last = leaders.size() - 1;
  const bool lost = leaders.rank() == last;
  const ArchiveBytes mine(archive);
  // The last node loses everything; node 0 holds its copy, made for kBinding.
  const auto rebuild_for = [&](const Binding& binding) {
    return rebuild_with(leaders, scheme, lost ? nullptr : &mine, archive_checksum(archive),
                        lost ? std::nullopt : std::optional<std::span<const std::byte>>(redundancy),
                        binding);
  };
  std::vector<std::optional<std::uint64_t>> recorded;
  for (const auto& bytes : leaders.allgather_bytes(archive)) {
    recorded.emplace_back(archive_checksum(Bytes(bytes.begin(), bytes.end())));
  }
  auto outcome =
      rebuild_for({.step = kBinding.step, .source = kBinding.source, .archives = recorded});
  ASSERT_TRUE(outcome.recoverable) << outcome.why;
  EXPECT_EQ(outcome.rebuilt_nodes, std::vector<int>{last});
  if (lost) {
    EXPECT_TRUE(outcome.archive && *outcome.archive == archive);
  }
  // The same copy taken for another step, another run, or an archive the level recorded
  // otherwise: never used, on every node alike.
  std::vector<std::optional<std::uint64_t>> other = recorded;
  other[static_cast<std::size_t>(last)] = *other[static_cast<std::size_t>(last)] + 1;
  for (const Binding& binding :
       {Binding{.step = 8, .source = kBinding.source}, Binding{.step = kBinding.step, .source = 1},
        Binding{.step = kBinding.step, .source = kBinding.source, .archives = other}}) {
    outcome = rebuild_for(binding);
    EXPECT_FALSE(outcome.recoverable) << binding.step << " " << binding.source;
    EXPECT_TRUE(outcome.rebuilt_nodes.empty());
    EXPECT_FALSE(outcome.archive.has_value());
    expect_alike(leaders, outcome.why);
  }
}

TEST(Redundancy, UnrecoverableLossesAreNamedAlikeOnEveryNode) {
  const Comm leaders = make_leaders();
  if (leaders.size() == 1) GTEST_SKIP() << "losing two nodes needs 2 nodes";
  const int me = leaders.rank();
  const int nodes = leaders.size();
  const Bytes archive = archive_of(me, size_of(me));

  const Redundancy xor4{.kind = RedundancyKind::xor_parity, .xor_group = 4};
  const Bytes parity = encode(leaders, xor4, archive);
  const bool lost = me == 0 || me == 1;
  auto outcome = rebuild(leaders, xor4, archive, parity, {lost, lost});
  EXPECT_FALSE(outcome.recoverable);
  EXPECT_TRUE(outcome.rebuilt_nodes.empty());
  EXPECT_FALSE(outcome.archive || outcome.redundancy);
  EXPECT_EQ(outcome.why, "nodes 0 and 1 of xor group 0 (nodes 0-" +
                             std::to_string(xor_group_of(0, nodes, 4).size - 1) +
                             ") are both lost");
  expect_alike(leaders, outcome.why);

  // The merged last group: with groups of 3 over 4 nodes, nodes 0 and 3 share one.
  if (nodes == 4) {
    const Redundancy xor3{.kind = RedundancyKind::xor_parity, .xor_group = 3};
    const Bytes parity3 = encode(leaders, xor3, archive);
    const bool gone = me == 0 || me == 3;
    outcome = rebuild(leaders, xor3, archive, parity3, {gone, gone});
    EXPECT_EQ(outcome.why, "nodes 0 and 3 of xor group 0 (nodes 0-3) are both lost");
  }

  // One lost node, and the parity of another member gone.
  if (nodes >= 3) {
    outcome = rebuild(leaders, xor4, archive, parity, {me == 1, me == 1 || me == 2});
    EXPECT_FALSE(outcome.recoverable);
    EXPECT_NE(outcome.why.find("node 1 of xor group 0"), std::string::npos) << outcome.why;
    EXPECT_NE(outcome.why.find("redundancy file of node 2"), std::string::npos) << outcome.why;
    expect_alike(leaders, outcome.why);
  }

  // partner: node 0 and node 1, which holds its copy, both lost.
  const Redundancy partner{.kind = RedundancyKind::partner};
  const Bytes copy = encode(leaders, partner, archive);
  outcome = rebuild(leaders, partner, archive, copy, {lost, lost});
  EXPECT_FALSE(outcome.recoverable);
  EXPECT_NE(outcome.why.find("node 0 and node 1, which holds its copy, are both lost"),
            std::string::npos)
      << outcome.why;
  expect_alike(leaders, outcome.why);
  // node 0 lost, node 1 keeps its archive but not its redundancy file.
  outcome = rebuild(leaders, partner, archive, copy, {me == 0, me <= 1});
  EXPECT_FALSE(outcome.recoverable);
  EXPECT_EQ(outcome.why,
            "node 0 is lost and node 1, which holds its copy, has no valid redundancy file "
            "(missing, damaged or stale)");
}

TEST(Redundancy, NodesMustPassTheSameScheme) {
  const Comm leaders = make_leaders();
  const Bytes archive = archive_of(leaders.rank(), size_of(leaders.rank()));
  // A distance that does not fit is refused on every node, before any data moves.
  EXPECT_THROW(
      (void)encode(leaders, {.kind = RedundancyKind::partner, .partner_distance = 0}, archive),
      InvalidArgument);
  EXPECT_THROW(
      (void)rebuild(leaders, {.kind = RedundancyKind::xor_parity, .xor_group = 1}, archive, {}, {}),
      InvalidArgument);
  if (leaders.size() == 1) GTEST_SKIP() << "a mismatch needs 2 nodes";
  const Redundancy mine = leaders.rank() == 1 ? Redundancy{.kind = RedundancyKind::xor_parity}
                                              : Redundancy{.kind = RedundancyKind::partner};
  try {
    (void)encode(leaders, mine, archive);
    ADD_FAILURE() << "different schemes were accepted";
  } catch (const CollectiveMismatch& e) {
    EXPECT_EQ(e.rank(), 1);
    EXPECT_EQ(e.field(), "scheme");
  }
  EXPECT_THROW((void)rebuild(leaders, mine, archive, {}, {}), CollectiveMismatch);
}

}  // namespace
