// cairn — what the primary found, sent to every rank (internal): the hdf5 format creates and
// opens data.h5 on the primary alone, and the other ranks learn the outcome from one broadcast,
// whatever the number of leaves: either an error, which every rank then throws alike (same
// type, path, field and message), or the bytes of what the primary learned (data addresses).
#pragma once

#include <cairn/comm.hpp>

#include <cstddef>
#include <functional>
#include <vector>

#include "base/packed.hpp"

namespace cairn::storage::h5 {

/// Runs `find` on the primary (which fills `out`) and broadcasts the outcome over `comm`: an
/// exception thrown there is rethrown on every rank as the same type (FormatError, NotFound,
/// IoError with their path and field; other kinds by their ErrorCode), otherwise every rank
/// gets the bytes the primary packed. Collective (one broadcast). Throws as described, and
/// what the broadcast throws (TimeoutError).
[[nodiscard]] std::vector<std::byte> primary_verdict(
    const Comm& comm, const std::function<void(base::Packed& out)>& find);

}  // namespace cairn::storage::h5
