// cairn — the zfp filter of HDF5 datasets (internal), in the format of H5Z-ZFP (filter id 32013,
// LLNL's plugin, packaged by Debian as hdf5-filter-plugin-zfp-serial), so that h5py and h5dump
// read cairn's zfp datasets with that plugin. cd_values[0] holds the zfp library version and
// codec; cd_values[1..] are a zfp bit stream holding zfp's full header (the field: type and
// chunk dimensions; the mode: here fixed accuracy). Each chunk is stored as zfp_compress()
// writes it, without a header.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <span>
#include <vector>

namespace cairn::storage::h5 {

/// The filter id of zfp in HDF5 (H5Z-ZFP's).
inline constexpr H5Z_filter_t kZfpFilterId = 32013;

/// The HDF5 filter class of zfp (H5Z_class2_t, version H5Z_CLASS_T_VERS).
extern const H5Z_class2_t kZfpFilterClass;

/// The cd_values of a dataset of float32 (`element_bytes` 4) or float64 (8) values in chunks of
/// `chunk` compressed with zfp's fixed-accuracy mode at `tolerance`. Empty when zfp cannot
/// compress such chunks (more than 4 dimensions above 1). Never throws beyond std::bad_alloc.
[[nodiscard]] std::vector<unsigned> zfp_cd_values(std::span<const std::int64_t> chunk,
                                                  std::size_t element_bytes, double tolerance);

}  // namespace cairn::storage::h5
