#include "storage/index/record_packing.hpp"

#include <cairn/error.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "base/packed.hpp"
#include "storage/index/leaf_stats.hpp"

namespace cairn::storage {

namespace {

// The position of `name` in `names`, added when new.
std::uint64_t name_number(std::vector<std::string>& names, const std::string& name) {
  const auto at = std::ranges::find(names, name);
  if (at != names.end()) return static_cast<std::uint64_t>(at - names.begin());
  names.push_back(name);
  return names.size() - 1;
}

void put_box_values(base::Packed& out, const std::vector<std::int64_t>& values) {
  for (const std::int64_t v : values) out.put(static_cast<std::uint64_t>(v));
}

std::vector<std::int64_t> take_box_values(base::Unpacked& in, std::uint64_t count) {
  std::vector<std::int64_t> out;
  for (; count > 0; --count) out.push_back(static_cast<std::int64_t>(in.take()));
  return out;
}

}  // namespace

std::vector<std::byte> pack_records(
    const std::vector<std::pair<std::size_t, ShardRecord>>& records) {
  std::vector<std::string> names;  // the files the records name, each once
  base::Packed body;
  body.put(static_cast<std::uint64_t>(records.size()));
  for (const auto& [array, s] : records) {
    body.put(static_cast<std::uint64_t>(array));
    body.put(static_cast<std::uint64_t>(s.rank));
    body.put(name_number(names, s.file));
    body.put(s.byte_offset);
    body.put(s.bytes);
    body.put(static_cast<std::uint64_t>(s.box.offset.size()));
    put_box_values(body, s.box.offset);
    put_box_values(body, s.box.extent);
    body.put(static_cast<std::uint64_t>(s.checksums.size()));
    body.put_all(s.checksums);
    body.put(static_cast<std::uint64_t>(s.chunk_sizes.size()));
    for (const std::uint64_t size : s.chunk_sizes) body.put(size);
    body.put(static_cast<std::uint64_t>(s.ref_files.size()));
    for (const std::string& file : s.ref_files) body.put(name_number(names, file));
    body.put(static_cast<std::uint64_t>(s.chunk_refs.size()));
    for (const ChunkRef& ref : s.chunk_refs) {
      body.put(static_cast<std::uint64_t>(ref.file));
      body.put(ref.byte_offset);
    }
    put_stats(body, s.stats);
  }
  base::Packed out;
  out.put(static_cast<std::uint64_t>(names.size()));
  for (const std::string& name : names) out.put(name);
  auto bytes = std::move(out.bytes());
  bytes.insert(bytes.end(), body.bytes().begin(), body.bytes().end());
  return bytes;
}

void unpack_records(std::span<const std::byte> bytes,
                    const std::function<void(std::size_t, ShardRecord&&)>& add) {
  base::Unpacked in(bytes);
  const std::uint64_t name_count = in.take();
  if (name_count > in.remaining()) {
    throw Error(ErrorCode::internal, "shard records name more files than they have bytes");
  }
  std::vector<std::string> names(static_cast<std::size_t>(name_count));
  for (std::string& name : names) name = in.take_text();
  const auto name_at = [&](std::uint64_t number) {
    if (number >= names.size()) {
      throw Error(ErrorCode::internal, "a shard record names a file its rank did not send");
    }
    return names[static_cast<std::size_t>(number)];
  };
  for (std::uint64_t count = in.take(); count > 0; --count) {
    const auto array = static_cast<std::size_t>(in.take());
    ShardRecord s;
    s.rank = static_cast<int>(in.take());
    s.file = name_at(in.take());
    s.byte_offset = in.take();
    s.bytes = in.take();
    const std::uint64_t nd = in.take();
    s.box.offset = take_box_values(in, nd);
    s.box.extent = take_box_values(in, nd);
    s.checksums = in.take_all(in.take());
    for (std::uint64_t sizes = in.take(); sizes > 0; --sizes) s.chunk_sizes.push_back(in.take());
    for (std::uint64_t files = in.take(); files > 0; --files) {
      s.ref_files.push_back(name_at(in.take()));
    }
    for (std::uint64_t refs = in.take(); refs > 0; --refs) {
      const auto file = static_cast<std::uint32_t>(in.take());
      s.chunk_refs.push_back({.file = file, .byte_offset = in.take()});
    }
    s.stats = take_stats(in);
    add(array, std::move(s));
  }
  if (!in.done()) throw Error(ErrorCode::internal, "shard records end with stray bytes");
}

}  // namespace cairn::storage
