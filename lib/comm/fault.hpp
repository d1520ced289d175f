// cairn — named fault points for tests (internal).
//
// A build configured with CAIRN_FAULT_INJECTION=ON reads the environment variable CAIRN_FAULT
// once: a comma-separated list of `<point>@<rank>[:kill][#<n>]` (rank of MPI_COMM_WORLD, or
// `*` for every rank; `#<n>`: only the n-th time the point is reached on that rank). At a
// listed point on a listed rank, fault::point() throws IoError ("injected fault at <point>")
// or, with `:kill`, SIGKILLs the process. In other builds fault::point() does nothing.
#pragma once

#include <cairn/config.hpp>

#include <string_view>

namespace cairn::fault {

#if CAIRN_HAVE_FAULT_INJECTION
/// Fires the fault configured for `name` on this rank, if any. Not collective. Throws
/// IoError when configured to.
void point(std::string_view name);
#else
inline void point(std::string_view) {}
#endif

}  // namespace cairn::fault
