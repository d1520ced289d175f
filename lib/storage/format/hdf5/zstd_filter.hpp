// cairn — the zstd filter of HDF5 datasets (internal): filter id 32015, the id registered with
// The HDF Group for Zstandard and used by h5py's hdf5plugin, so that the datasets cairn
// compresses are read by any HDF5 reader with a zstd plugin. Each chunk is stored as one zstd
// frame; cd_values[0], when given, is the compression level (zstd's default when absent or 0).
//
// The same code serves libcairn (registered in-process, register_filters() in
// hdf5/compression.hpp) and the plugin libH5Zcairn_zstd.so that external readers load from
// HDF5_PLUGIN_PATH (zstd_plugin.cpp): it uses no cairn code and links no libhdf5 (buffers come
// from and go to malloc/free, as HDF5 allocates filter buffers).
#pragma once

#include <hdf5.h>

namespace cairn::storage::h5 {

/// The filter id of zstd in HDF5.
inline constexpr H5Z_filter_t kZstdFilterId = 32015;

/// The HDF5 filter class of zstd (H5Z_class2_t, version H5Z_CLASS_T_VERS).
extern const H5Z_class2_t kZstdFilterClass;

}  // namespace cairn::storage::h5
