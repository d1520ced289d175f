#include "storage/format/posix/shipping.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cairn/error.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <system_error>
#include <thread>

namespace cairn::storage {
namespace {

// The segment: a header page, then per member a control page and its slots.
//   header:  magic, layout, members, slot_bytes, aggregator state
//   control: [0] slots published, [8] member state (written by the member; own cache line)
//            [64] slots consumed (written by the aggregator; own cache line)
//            [128 + 16 k] slot k's file offset and bytes
constexpr std::uint64_t kMagic = 0x434149524E534850ULL;  // "CAIRNSHP"
constexpr std::uint64_t kLayout = 1;
constexpr std::size_t kPage = 4096;
constexpr std::uint64_t kSlots = 4;
constexpr std::size_t kMinSlot = std::size_t{16} << 10;
constexpr std::size_t kMaxSlot = std::size_t{8} << 20;

constexpr std::size_t kMagicAt = 0;
constexpr std::size_t kLayoutAt = 8;
constexpr std::size_t kMembersAt = 16;
constexpr std::size_t kSlotBytesAt = 24;
constexpr std::size_t kAggregatorStateAt = 32;
constexpr std::size_t kPublishedAt = 0;
constexpr std::size_t kMemberStateAt = 8;
constexpr std::size_t kConsumedAt = 64;
constexpr std::size_t kDescriptorsAt = 128;

enum MemberState : std::uint64_t { writing = 0, finished = 1, abandoned = 2 };
enum AggregatorState : std::uint64_t { serving = 0, failed = 1, gone = 2, timed_out = 3 };

// The rings are shared between processes: their atomics must not hide a lock.
static_assert(std::atomic_ref<std::uint64_t>::is_always_lock_free);

std::atomic<std::uint64_t> shipped{0};
std::atomic<std::uint64_t> received{0};

// Closes a descriptor when it goes out of scope.
struct FdGuard {
  int fd = -1;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

std::size_t slot_bytes_for(std::size_t ring_bytes, std::size_t members) {
  const std::size_t each = ring_bytes / (kSlots * std::max<std::size_t>(members, 1));
  return std::clamp(each, kMinSlot, kMaxSlot) / kPage * kPage;
}

std::size_t stride_of(std::size_t slot_bytes) { return kPage + kSlots * slot_bytes; }

std::string system_error(int code) { return std::generic_category().message(code); }

// Waits with a few yields first, then sleeps growing to a millisecond, until a deadline.
class Backoff {
 public:
  explicit Backoff(std::chrono::milliseconds timeout)
      : deadline_(std::chrono::steady_clock::now() + timeout) {}
  // Waits a little; false once the deadline has passed.
  bool wait() {
    if (++spins_ < 32) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(delay_);
      delay_ = std::min(delay_ * 2, std::chrono::microseconds(1000));
    }
    return std::chrono::steady_clock::now() < deadline_;
  }

 private:
  std::chrono::steady_clock::time_point deadline_;
  int spins_ = 0;
  std::chrono::microseconds delay_{20};
};

}  // namespace

struct ShippingRing::Mapping {
  std::byte* base = nullptr;
  std::size_t size = 0;
  std::size_t slot_bytes = 0;

  ~Mapping() {
    if (base != nullptr) ::munmap(base, size);
  }
  std::uint64_t& word(std::size_t at) const { return *reinterpret_cast<std::uint64_t*>(base + at); }
  std::atomic_ref<std::uint64_t> atomic(std::size_t at) const {
    return std::atomic_ref<std::uint64_t>(word(at));
  }
  std::size_t control(int member) const {
    return kPage + static_cast<std::size_t>(member) * stride_of(slot_bytes);
  }
  std::size_t descriptor(int member, std::uint64_t slot) const {
    return control(member) + kDescriptorsAt + static_cast<std::size_t>(slot % kSlots) * 16;
  }
  std::byte* slot(int member, std::uint64_t slot) const {
    return base + control(member) + kPage + static_cast<std::size_t>(slot % kSlots) * slot_bytes;
  }
};

ShippingRing::ShippingRing(ShippingPlan plan, int member, std::unique_ptr<Mapping> mapping)
    : plan_(std::move(plan)), member_(member), mapping_(std::move(mapping)) {
  if (member_ < 0) {
    consumed_.assign(plan_.members.size(), 0);
    done_.assign(plan_.members.size(), false);
  }
}

std::unique_ptr<ShippingRing> ShippingRing::create(const ShippingPlan& plan,
                                                   std::size_t ring_bytes) {
  const std::string& name = plan.segment;
  const auto fail = [&](const std::string& what, int code) {
    return IoError(name, fmt::format("aggregator rank {} of '{}': {} the shared memory '{}': {}",
                                     plan.aggregator, plan.file, what, name, system_error(code)));
  };
  auto mapping = std::make_unique<Mapping>();
  mapping->slot_bytes = slot_bytes_for(ring_bytes, plan.members.size());
  mapping->size = kPage + plan.members.size() * stride_of(mapping->slot_bytes);
  FdGuard fd{::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600)};
  if (fd.fd < 0 && errno == EEXIST) {  // left by a save of the same directory that was killed
    ::shm_unlink(name.c_str());
    fd.fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  }
  if (fd.fd < 0) throw fail("cannot create", errno);
  // Reserved now, so that a full /dev/shm is an error here and not a SIGBUS on first touch.
  const int reserved = ::posix_fallocate(fd.fd, 0, static_cast<off_t>(mapping->size));
  void* base = reserved == 0
                   ? ::mmap(nullptr, mapping->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.fd, 0)
                   : MAP_FAILED;
  if (base == MAP_FAILED) {
    const int error = reserved != 0 ? reserved : errno;
    ::shm_unlink(name.c_str());
    throw fail(fmt::format("cannot reserve {} bytes of", mapping->size), error);
  }
  mapping->base = static_cast<std::byte*>(base);
  // The file is zeroed: every counter and state starts at 0. The magic goes last.
  mapping->word(kLayoutAt) = kLayout;
  mapping->word(kMembersAt) = plan.members.size();
  mapping->word(kSlotBytesAt) = mapping->slot_bytes;
  mapping->atomic(kMagicAt).store(kMagic, std::memory_order_release);
  return std::unique_ptr<ShippingRing>(new ShippingRing(plan, -1, std::move(mapping)));
}

std::unique_ptr<ShippingRing> ShippingRing::attach(const ShippingPlan& plan, int member) {
  const std::string& name = plan.segment;
  const int rank = plan.members.at(static_cast<std::size_t>(member)).rank;
  const auto fail = [&](const std::string& what) {
    return IoError(name, fmt::format("rank {}: cannot ship its shards to aggregator rank {} of "
                                     "'{}': the shared memory '{}' {}",
                                     rank, plan.aggregator, plan.file, name, what));
  };
  auto mapping = std::make_unique<Mapping>();
  const FdGuard fd{::shm_open(name.c_str(), O_RDWR, 0600)};
  if (fd.fd < 0) throw fail(fmt::format("does not open: {}", system_error(errno)));
  struct stat info {};
  const bool sized = ::fstat(fd.fd, &info) == 0 && info.st_size >= static_cast<off_t>(kPage);
  mapping->size = sized ? static_cast<std::size_t>(info.st_size) : 0;
  void* base = sized ? ::mmap(nullptr, mapping->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.fd, 0)
                     : MAP_FAILED;
  if (base == MAP_FAILED) {
    throw fail(sized ? fmt::format("does not map: {}", system_error(errno)) : "is too short");
  }
  mapping->base = static_cast<std::byte*>(base);
  // The magic first: the aggregator stores it last.
  const bool magic = mapping->atomic(kMagicAt).load(std::memory_order_acquire) == kMagic;
  mapping->slot_bytes = static_cast<std::size_t>(mapping->word(kSlotBytesAt));
  const bool laid_out =
      magic && mapping->word(kLayoutAt) == kLayout &&
      mapping->word(kMembersAt) == plan.members.size() && mapping->slot_bytes >= kMinSlot &&
      mapping->slot_bytes <= kMaxSlot &&
      mapping->size == kPage + plan.members.size() * stride_of(mapping->slot_bytes);
  if (!laid_out) throw fail("is not laid out for this group");
  return std::unique_ptr<ShippingRing>(new ShippingRing(plan, member, std::move(mapping)));
}

ShippingRing::~ShippingRing() {
  if (!mapping_) return;
  if (member_ >= 0) {
    if (!finished_) {
      mapping_->atomic(mapping_->control(member_) + kMemberStateAt)
          .store(abandoned, std::memory_order_release);
    }
  } else {
    std::uint64_t state = serving;
    mapping_->atomic(kAggregatorStateAt)
        .compare_exchange_strong(state, gone, std::memory_order_acq_rel);
    unlink();
  }
}

void ShippingRing::unlink() noexcept {
  if (member_ >= 0 || unlinked_) return;
  ::shm_unlink(plan_.segment.c_str());
  unlinked_ = true;
}

void ShippingRing::wait_for_slot() {
  const std::size_t control = mapping_->control(member_);
  const std::uint64_t published =
      mapping_->atomic(control + kPublishedAt).load(std::memory_order_relaxed);
  Backoff backoff(plan_.timeout);
  const int rank = plan_.members[static_cast<std::size_t>(member_)].rank;
  while (published - mapping_->atomic(control + kConsumedAt).load(std::memory_order_acquire) >=
         kSlots) {
    const std::uint64_t state =
        mapping_->atomic(kAggregatorStateAt).load(std::memory_order_acquire);
    if (state != serving) {
      throw IoError(plan_.file,
                    fmt::format("rank {}: shipping its shards to aggregator rank {} of '{}': the "
                                "aggregator {}",
                                rank, plan_.aggregator, plan_.file,
                                state == failed      ? "failed"
                                : state == timed_out ? "stopped waiting for a rank of the group"
                                                     : "left the save"));
    }
    if (!backoff.wait()) {
      throw TimeoutError({plan_.aggregator},
                         fmt::format("rank {}: shipping its shards to aggregator rank {} of '{}': "
                                     "no slot came free within {} ms",
                                     rank, plan_.aggregator, plan_.file, plan_.timeout.count()));
    }
  }
}

void ShippingRing::publish() {
  const std::size_t control = mapping_->control(member_);
  const std::uint64_t published =
      mapping_->atomic(control + kPublishedAt).load(std::memory_order_relaxed);
  const std::size_t descriptor = mapping_->descriptor(member_, published);
  mapping_->word(descriptor) = open_offset_;
  mapping_->word(descriptor + 8) = open_bytes_;
  mapping_->atomic(control + kPublishedAt).store(published + 1, std::memory_order_release);
  open_ = false;
}

void ShippingRing::ship(std::uint64_t offset, std::span<const std::byte> data) {
  const std::size_t slot_bytes = mapping_->slot_bytes;
  while (!data.empty()) {
    if (open_ && (offset != open_offset_ + open_bytes_ || open_bytes_ == slot_bytes)) publish();
    if (!open_) {
      wait_for_slot();
      open_ = true;
      open_offset_ = offset;
      open_bytes_ = 0;
    }
    const std::size_t n =
        std::min<std::size_t>(data.size(), slot_bytes - static_cast<std::size_t>(open_bytes_));
    const std::uint64_t published =
        mapping_->atomic(mapping_->control(member_) + kPublishedAt).load(std::memory_order_relaxed);
    std::memcpy(mapping_->slot(member_, published) + open_bytes_, data.data(), n);
    shipped.fetch_add(n, std::memory_order_relaxed);
    open_bytes_ += n;
    offset += n;
    data = data.subspan(n);
  }
}

void ShippingRing::finish() {
  if (finished_) return;
  if (open_) publish();
  mapping_->atomic(mapping_->control(member_) + kMemberStateAt)
      .store(MemberState::finished, std::memory_order_release);
  finished_ = true;
}

bool ShippingRing::drain(const Sink& sink) {
  bool all = true;
  for (std::size_t m = 0; m < plan_.members.size(); ++m) {
    if (done_[m]) continue;
    const int member = static_cast<int>(m);
    const ShippingMember& who = plan_.members[m];
    const std::size_t control = mapping_->control(member);
    // The state first: a member finishes after its last publish, so a finished member's
    // count read after it is final.
    const std::uint64_t state =
        mapping_->atomic(control + kMemberStateAt).load(std::memory_order_acquire);
    const std::uint64_t published =
        mapping_->atomic(control + kPublishedAt).load(std::memory_order_acquire);
    for (std::uint64_t& c = consumed_[m]; c < published; ++c) {
      const std::size_t descriptor = mapping_->descriptor(member, c);
      const std::uint64_t offset = mapping_->word(descriptor);
      const std::uint64_t bytes = mapping_->word(descriptor + 8);
      if (bytes > mapping_->slot_bytes || offset < who.base || offset - who.base > who.limit ||
          bytes > who.limit - (offset - who.base)) {
        mapping_->atomic(kAggregatorStateAt).store(failed, std::memory_order_release);
        throw IoError(plan_.file,
                      fmt::format("aggregator rank {} of '{}': rank {} shipped bytes [{}, {}) "
                                  "outside its region [{}, {})",
                                  plan_.aggregator, plan_.file, who.rank, offset, offset + bytes,
                                  who.base, who.base + who.limit));
      }
      try {
        sink(who.rank, offset, {mapping_->slot(member, c), static_cast<std::size_t>(bytes)});
      } catch (...) {
        mapping_->atomic(kAggregatorStateAt).store(failed, std::memory_order_release);
        throw;
      }
      received.fetch_add(bytes, std::memory_order_relaxed);
      mapping_->atomic(control + kConsumedAt).store(c + 1, std::memory_order_release);
    }
    done_[m] = state != writing;
    all = all && done_[m];
  }
  return all;
}

void ShippingRing::drain_all(const Sink& sink) {
  // The timeout runs from the last slot received, not from the start: one writer may take
  // long for a whole group's bytes while every slot comes in time.
  const auto received = [&] {
    std::uint64_t sum = 0;
    for (const std::uint64_t c : consumed_) sum += c;
    return sum;
  };
  std::optional<Backoff> backoff;
  std::uint64_t before = received();
  while (!drain(sink)) {
    if (const std::uint64_t now = received(); now != before || !backoff) {
      before = now;
      backoff.emplace(plan_.timeout);
    }
    if (!backoff->wait()) {
      std::vector<int> missing;
      for (std::size_t m = 0; m < plan_.members.size(); ++m) {
        if (!done_[m]) missing.push_back(plan_.members[m].rank);
      }
      mapping_->atomic(kAggregatorStateAt).store(timed_out, std::memory_order_release);
      throw TimeoutError(missing, fmt::format("aggregator rank {} of '{}': ranks {} did not finish "
                                              "shipping their shards within {} ms",
                                              plan_.aggregator, plan_.file, fmt::join(missing, ","),
                                              plan_.timeout.count()));
    }
  }
}

void ShippingRing::fail() noexcept {
  if (member_ < 0) mapping_->atomic(kAggregatorStateAt).store(failed, std::memory_order_release);
}

std::size_t ShippingRing::slot_bytes() const noexcept { return mapping_->slot_bytes; }

ShippedBytes shipped_bytes() noexcept {
  return {.shipped = shipped.load(std::memory_order_relaxed),
          .received = received.load(std::memory_order_relaxed)};
}

}  // namespace cairn::storage
