// cairn (the command-line tool) — the text of `cairn --version`.
#pragma once

#include <string>

namespace cairn_tool {

/// `cairn --version`: the library's version, the versions of what it writes, what this build
/// can store (formats, compression) and, with HDF5 and zstd, where the zstd filter plugin is
/// and whether HDF5 readers without cairn (h5py, h5dump) find it. Local; throws nothing.
std::string version_text();

}  // namespace cairn_tool
