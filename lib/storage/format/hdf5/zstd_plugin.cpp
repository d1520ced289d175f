// libH5Zcairn_zstd.so: cairn's zstd filter (hdf5/zstd_filter.hpp) as an HDF5 filter plugin, for
// readers without cairn (h5py, h5dump) that find it through HDF5_PLUGIN_PATH. Links zstd only.
#include <H5PLextern.h>

#include "storage/format/hdf5/zstd_filter.hpp"

extern "C" {

H5PL_type_t H5PLget_plugin_type(void) { return H5PL_TYPE_FILTER; }

const void* H5PLget_plugin_info(void) { return &cairn::storage::h5::kZstdFilterClass; }

}  // extern "C"
