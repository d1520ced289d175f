#include "manager/levels/redundancy.hpp"

#include <mpi.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cairn/error.hpp>
#include <cstdint>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <memory>
#include <utility>

#include "base/log.hpp"
#include "base/packed.hpp"
#include "comm/deadline.hpp"
#include "comm/mpi_check.hpp"
#include "manager/levels/file_map.hpp"
#include "manager/levels/redundancy_file.hpp"
#include "manager/levels/redundancy_transfer.hpp"
#include "manager/levels/step_archive.hpp"

namespace cairn::levels {
namespace {

// Tags of the point-to-point transfers on the leaders' communicator (Comm's own are 0x636x).
constexpr int kTagArchive = 0x6c01;  // a lost node's archive, from the node holding its copy
constexpr int kTagCopy = 0x6c02;     // an archive, to the node that keeps a copy of it

// ---- What every node holds -----------------------------------------------------------------

struct NodeState {
  std::string scheme;
  bool archive_intact = false;
  std::uint64_t archive_size = 0;
  std::uint64_t archive_checksum = 0;
  std::optional<std::uint64_t> recorded_checksum;  // what the node recorded for its archive
  std::optional<std::vector<Covered>> redundancy;  // what its valid redundancy file records
};

Bytes pack_state(const NodeState& s) {
  base::Packed out;
  out.put(s.scheme);
  out.put_byte(static_cast<std::uint8_t>((s.archive_intact ? 1 : 0) |
                                         (s.recorded_checksum ? 2 : 0) | (s.redundancy ? 4 : 0)));
  out.put(s.archive_size);
  put_checksum(out, s.archive_checksum);
  put_checksum(out, s.recorded_checksum.value_or(0));
  if (s.redundancy) {
    out.put(static_cast<std::uint64_t>(s.redundancy->size()));
    for (const auto& c : *s.redundancy) {
      out.put(static_cast<std::uint64_t>(c.node));
      out.put(c.size);
      put_checksum(out, c.checksum);
    }
  }
  return std::move(out.bytes());
}

NodeState unpack_state(std::span<const std::byte> bytes) {
  base::Unpacked in(bytes);
  NodeState s;
  s.scheme = in.take_text();
  const std::uint8_t flags = in.take_byte();
  s.archive_intact = (flags & 1) != 0;
  s.archive_size = in.take();
  s.archive_checksum = in.take_all(1).front();
  const std::uint64_t recorded = in.take_all(1).front();
  if ((flags & 2) != 0) s.recorded_checksum = recorded;
  if ((flags & 4) != 0) {
    s.redundancy.emplace(to_size(in.take()));
    for (auto& c : *s.redundancy) {
      c.node = static_cast<int>(in.take());
      c.size = in.take();
      c.checksum = in.take_all(1).front();
    }
  }
  return s;
}

// Every node's state, after checking that all pass the same scheme and that it fits them.
std::vector<NodeState> gather_states(const Comm& leaders, const Redundancy& scheme,
                                     const NodeState& mine, std::string_view what) {
  const auto all = leaders.allgather_bytes(pack_state(mine));
  std::vector<NodeState> states;
  for (const auto& bytes : all) states.push_back(unpack_state(bytes));
  for (std::size_t r = 1; r < states.size(); ++r) {
    if (states[r].scheme != states[0].scheme) {
      throw CollectiveMismatch(
          static_cast<int>(r), "scheme",
          fmt::format("{}: node {} passes the redundancy scheme {} but node 0 passes {}; every "
                      "node must pass the same",
                      what, r, states[r].scheme, states[0].scheme));
    }
  }
  if (const auto problem = scheme_problem(scheme, leaders.size())) {
    throw InvalidArgument(fmt::format("{}: {}", what, *problem));
  }
  return states;
}

// A redundancy file that records another archive than the one a node holds (or says it held)
// is stale: it counts as missing.
void drop_stale(std::vector<NodeState>& states) {
  for (std::size_t k = 0; k < states.size(); ++k) {
    if (!states[k].redundancy) continue;
    for (const auto& c : *states[k].redundancy) {
      const NodeState& of = states[to_size(static_cast<std::uint64_t>(c.node))];
      const bool differs = of.archive_intact
                               ? (of.archive_size != c.size || of.archive_checksum != c.checksum)
                               : (of.recorded_checksum && *of.recorded_checksum != c.checksum);
      if (!differs) continue;
      base::log::warn("levels.redundancy_stale", "node={} protected={}", k, c.node);
      states[k].redundancy.reset();
      break;
    }
  }
}

// ---- Deciding, alike on every node ---------------------------------------------------------

struct Plan {
  std::vector<std::string> problems;  // empty: recoverable
  std::vector<int> lost;              // nodes whose archive is rebuilt
  std::vector<int> refill;            // nodes whose redundancy file is recomputed
};

Plan plan_of(const std::vector<NodeState>& states, RedundancyKind kind) {
  Plan plan;
  for (std::size_t n = 0; n < states.size(); ++n) {
    if (!states[n].archive_intact) plan.lost.push_back(static_cast<int>(n));
    if (kind != RedundancyKind::none && !states[n].redundancy) {
      plan.refill.push_back(static_cast<int>(n));
    }
  }
  if (kind == RedundancyKind::none && !plan.lost.empty()) {
    plan.problems.push_back(fmt::format("{} {} lost and the redundancy scheme is none",
                                        name_nodes(plan.lost),
                                        plan.lost.size() == 1 ? "is" : "are"));
  }
  return plan;
}

// partner: a lost node needs the valid redundancy file of the node holding its copy. A node to
// refill needs the archive of the node it copies, which is then intact: were that one lost, its
// copy would be the missing file.
void check_partner(const std::vector<NodeState>& states, int d, Plan& plan) {
  const int nodes = static_cast<int>(states.size());
  for (const int n : plan.lost) {
    const int holder = (n + d) % nodes;
    const NodeState& h = states[to_size(static_cast<std::uint64_t>(holder))];
    if (h.redundancy) continue;
    plan.problems.push_back(
        h.archive_intact
            ? fmt::format("node {} is lost and node {}, which holds its copy, has no valid "
                          "redundancy file (missing, damaged or stale)",
                          n, holder)
            : fmt::format("node {} and node {}, which holds its copy, are both lost", n, holder));
  }
}

// xor: at most one lost node per group, and valid redundancy files, agreeing about it, on the
// others of the group.
void check_xor(const std::vector<NodeState>& states, int g, Plan& plan) {
  const int nodes = static_cast<int>(states.size());
  for (int first = 0; first < nodes; first += group_of(first, nodes, g).size) {
    const Group group = group_of(first, nodes, g);
    std::vector<int> lost;
    std::vector<int> invalid;
    for (int n = group.first; n < group.first + group.size; ++n) {
      const NodeState& s = states[to_size(static_cast<std::uint64_t>(n))];
      if (!s.archive_intact) lost.push_back(n);
      if (!s.redundancy) invalid.push_back(n);
    }
    if (lost.size() >= 2) {
      plan.problems.push_back(fmt::format("{} of {} are {}lost", name_nodes(lost), group.name(),
                                          lost.size() == 2 ? "both " : ""));
      continue;
    }
    if (lost.empty()) continue;
    std::erase(invalid, lost[0]);
    if (!invalid.empty()) {
      plan.problems.push_back(fmt::format(
          "node {} of {} is lost and the redundancy file of {}, which holds part of its parity, "
          "is missing, damaged or stale",
          lost[0], group.name(), name_nodes(invalid)));
      continue;
    }
    std::optional<Covered> recorded;
    for (int n = group.first; n < group.first + group.size; ++n) {
      if (n == lost[0]) continue;
      const Covered& c =
          (*states[to_size(static_cast<std::uint64_t>(n))]
                .redundancy)[to_size(static_cast<std::uint64_t>(lost[0] - group.first))];
      if (recorded && !(*recorded == c)) {
        plan.problems.push_back(fmt::format("the redundancy files of {} disagree about node {}",
                                            group.name(), lost[0]));
        break;
      }
      recorded = c;
    }
  }
}

// ---- Carrying out a plan -------------------------------------------------------------------

// What this node holds that a plan may use.
struct Local {
  ArchiveBytes archive;              // when intact
  ArchiveBytes payload;              // of its valid redundancy file
  std::filesystem::path redundancy;  // where its recomputed redundancy file goes
  Binding binding;                   // what a recomputed redundancy file is made for
};

struct Work {
  SharedBytes archive;      // rebuilt, not yet checked
  Covered expected;         // what the rebuilt archive must be
  bool redundancy = false;  // this node's redundancy file was recomputed and written
};

// This node's new redundancy file of `header`, once its payload is in place.
void write_sealed(MappedOutput& file, const FileHeader& header) {
  seal(file.bytes(), header);
  file.commit();
}

Work run_partner(const Comm& leaders, const Redundancy& scheme,
                 const std::vector<NodeState>& states, const Plan& plan, const Local& local) {
  const int me = leaders.rank();
  const int nodes = leaders.size();
  const int d = scheme.partner_distance;
  const auto state = [&](int n) -> const NodeState& {
    return states[to_size(static_cast<std::uint64_t>(n))];
  };
  Work work;
  std::vector<Send> sends;
  std::vector<Receive> receives;
  if (std::ranges::find(plan.lost, me) != plan.lost.end()) {
    const int holder = (me + d) % nodes;
    work.expected = state(holder).redundancy->front();
    work.archive = std::make_shared<Bytes>(to_size(work.expected.size));
    receives.push_back({holder, kTagArchive, work.archive, *work.archive});
  }
  if (const int lost = (me - d + nodes) % nodes;
      std::ranges::find(plan.lost, lost) != plan.lost.end()) {
    sends.push_back({lost, kTagArchive, local.payload});
  }
  FileHeader header;
  std::shared_ptr<MappedOutput> file;
  if (std::ranges::find(plan.refill, me) != plan.refill.end()) {
    const int source = (me - d + nodes) % nodes;
    const NodeState& s = state(source);
    header = {scheme,
              me,
              nodes,
              {{source, s.archive_size, s.archive_checksum}},
              s.archive_size,
              0,
              local.binding.step,
              local.binding.source};
  }
  // Every node allocates its file before any data moves: a full file system fails on every
  // node here, not as a node missing from the exchange.
  leaders.run_all("allocating the partner copy", [&] {
    if (header.nodes == 0) return;
    file = std::make_shared<MappedOutput>(local.redundancy, file_size(header));
    receives.push_back({header.covered.front().node, kTagCopy, file,
                        file->bytes().last(to_size(header.payload_size))});
  });
  if (const int to = (me + d) % nodes; std::ranges::find(plan.refill, to) != plan.refill.end()) {
    sends.push_back({to, kTagCopy, local.archive});
  }
  transfer(leaders, sends, receives, "partner redundancy exchange");
  if (file) {
    // The copy is the archive its node checksummed: no second pass over it.
    header.payload_checksum = header.covered.front().checksum;
    write_header(file->bytes(), header);
    file->commit();
    work.redundancy = true;
  }
  return work;
}

// The archive sizes and checksums of the members of `group`: an intact one's own, a lost
// one's as the others' redundancy files record it.
std::vector<Covered> members_of(const std::vector<NodeState>& states, const Group& group) {
  std::vector<Covered> members;
  for (int n = group.first; n < group.first + group.size; ++n) {
    const NodeState& s = states[to_size(static_cast<std::uint64_t>(n))];
    if (s.archive_intact) {
      members.push_back({n, s.archive_size, s.archive_checksum});
      continue;
    }
    const int other = n == group.first ? n + 1 : group.first;
    members.push_back((*states[to_size(static_cast<std::uint64_t>(other))]
                            .redundancy)[to_size(static_cast<std::uint64_t>(n - group.first))]);
  }
  return members;
}

Work run_xor(const Comm& leaders, const Redundancy& scheme, const std::vector<NodeState>& states,
             const Plan& plan, const Local& local) {
  const int me = leaders.rank();
  GroupComm group(leaders, group_of(me, leaders.size(), scheme.xor_group));
  const Group& g = group.group();
  const int m = g.size;
  const int position = me - g.first;
  const auto members = members_of(states, g);
  std::vector<std::uint64_t> sizes;
  for (const auto& c : members) sizes.push_back(c.size);
  const std::uint64_t chunk = chunk_bytes(sizes);
  const auto in_group = [&](int n) { return n >= g.first && n < g.first + m; };
  const auto lost = std::ranges::find_if(plan.lost, in_group);
  Work work;
  SharedBytes scratch;
  // This node's new redundancy file, when it is recomputed; allocated on every node before any
  // data moves, so that a full file system fails on every node here, not as a node missing
  // from a reduction.
  const FileHeader header{scheme, me, leaders.size(),     members,
                          chunk,  0,  local.binding.step, local.binding.source};
  std::shared_ptr<MappedOutput> file;
  leaders.run_all("allocating the xor parity", [&] {
    if (std::ranges::find(plan.refill, me) == plan.refill.end()) return;
    file = std::make_shared<MappedOutput>(local.redundancy, file_size(header));
  });
  if (lost != plan.lost.end()) {
    // Chunk c of the lost member j lies in the parity of member (j + 1 + c) mod m, XORed with
    // chunks of the others; that member gives its parity in place of a chunk of its own.
    const int j = *lost - g.first;
    if (position == j) {
      work.expected = members[to_size(static_cast<std::uint64_t>(j))];
      work.archive =
          std::make_shared<Bytes>(to_size(chunk) * to_size(static_cast<std::uint64_t>(m - 1)));
    }
    for (int k = 0; k < m; ++k) {
      if (k == j) continue;
      const int c = chunk_in_parity(j, k, m);
      const Part part =
          position == k ? Part{&local.payload, 0}
                        : Part{&local.archive,
                               chunk * static_cast<std::uint64_t>(chunk_in_parity(position, k, m))};
      const std::span<std::byte> out =
          work.archive ? std::span(*work.archive)
                             .subspan(to_size(chunk) * static_cast<std::size_t>(c), to_size(chunk))
                       : std::span<std::byte>();
      xor_into(leaders, group, j, part, chunk, work.archive, out, scratch,
               "rebuilding node " + std::to_string(*lost) + " from the parity of " + g.name());
    }
  }
  const auto refilled = std::ranges::count_if(plan.refill, in_group);
  if (lost == plan.lost.end() && refilled == m) {
    // Every member's parity is recomputed (a save): all of them at once.
    all_parities(leaders, group, local.archive, chunk, file, file->bytes().last(to_size(chunk)),
                 "computing the parities of " + g.name());
    write_sealed(*file, header);
    work.redundancy = true;
    return work;
  }
  for (const int n : plan.refill) {
    if (!in_group(n)) continue;
    const int k = n - g.first;
    const Part part{&local.archive,
                    chunk * static_cast<std::uint64_t>(chunk_in_parity(position, k, m))};
    const bool mine = position == k;
    xor_into(leaders, group, k, part, chunk, mine ? file : nullptr,
             mine ? file->bytes().last(to_size(chunk)) : std::span<std::byte>(), scratch,
             "computing the parity of node " + std::to_string(n) + " in " + g.name());
    if (mine) {
      write_sealed(*file, header);
      work.redundancy = true;
    }
  }
  return work;
}

NodeState my_state(const Redundancy& scheme, const ArchiveBytes* archive,
                   std::optional<std::uint64_t> recorded, const std::optional<ParsedFile>& file) {
  NodeState s;
  s.scheme = describe(scheme);
  s.recorded_checksum = recorded;
  if (archive != nullptr) {
    s.archive_size = archive->size();
    s.archive_checksum = archive->checksum();
    s.archive_intact = !recorded || *recorded == s.archive_checksum;
  }
  if (file) s.redundancy = file->header.covered;
  return s;
}

Work run_plan(const Comm& leaders, const Redundancy& scheme, const std::vector<NodeState>& states,
              const Plan& plan, const Local& local) {
  if (plan.lost.empty() && plan.refill.empty()) return {};
  if (scheme.kind == RedundancyKind::partner) {
    return run_partner(leaders, scheme, states, plan, local);
  }
  return run_xor(leaders, scheme, states, plan, local);
}

}  // namespace

void encode_redundancy(const Comm& leaders, const Redundancy& scheme, const Binding& binding,
                       const ArchiveBytes& my_archive, const std::filesystem::path& file) {
  if (scheme.kind == RedundancyKind::none) return;
  const auto states =
      gather_states(leaders, scheme, my_state(scheme, &my_archive, {}, {}), "encode_redundancy");
  Plan plan;
  for (int n = 0; n < leaders.size(); ++n) plan.refill.push_back(n);
  (void)run_plan(leaders, scheme, states, plan,
                 {.archive = my_archive, .payload = {}, .redundancy = file, .binding = binding});
}

RebuildOutcome rebuild_lost(const Comm& leaders, const Redundancy& scheme, const Binding& binding,
                            const ArchiveBytes* my_archive,
                            std::optional<std::uint64_t> my_archive_checksum,
                            std::optional<std::span<const std::byte>> my_redundancy,
                            const std::filesystem::path& redundancy_file) {
  const auto file = valid_file(my_redundancy, scheme, binding, leaders);
  const NodeState mine = my_state(scheme, my_archive, my_archive_checksum, file);
  auto states = gather_states(leaders, scheme, mine, "rebuild_lost");
  drop_stale(states);
  Plan plan = plan_of(states, scheme.kind);
  if (scheme.kind == RedundancyKind::partner) check_partner(states, scheme.partner_distance, plan);
  if (scheme.kind == RedundancyKind::xor_parity) check_xor(states, scheme.xor_group, plan);
  RebuildOutcome outcome;
  if (!plan.problems.empty()) {
    outcome.recoverable = false;
    outcome.why = fmt::format("{}", fmt::join(plan.problems, "; "));
    return outcome;
  }
  const Local local{
      .archive = mine.archive_intact ? *my_archive : ArchiveBytes(),
      .payload = states[to_size(static_cast<std::uint64_t>(leaders.rank()))].redundancy
                     ? ArchiveBytes({file->payload}, nullptr, file->header.payload_checksum)
                     : ArchiveBytes(),
      .redundancy = redundancy_file,
      .binding = binding};
  Work work = run_plan(leaders, scheme, states, plan, local);
  bool archive_ok = true;
  if (work.archive) {
    work.archive->resize(to_size(work.expected.size));
    archive_ok = archive_checksum(*work.archive) == work.expected.checksum;
  }
  if (!plan.lost.empty()) {
    const auto verdicts = leaders.allgather(std::int64_t{archive_ok ? 0 : 1});
    std::vector<int> wrong;
    for (std::size_t n = 0; n < verdicts.size(); ++n) {
      if (verdicts[n] != 0) wrong.push_back(static_cast<int>(n));
    }
    if (!wrong.empty()) {
      outcome.recoverable = false;
      outcome.why =
          fmt::format("the rebuilt archive of {} does not match the checksum recorded for it",
                      name_nodes(wrong));
      return outcome;
    }
  }
  outcome.rebuilt_nodes = plan.lost;
  if (work.archive) outcome.archive = std::move(*work.archive);
  outcome.redundancy_rewritten = work.redundancy;
  return outcome;
}

}  // namespace cairn::levels
