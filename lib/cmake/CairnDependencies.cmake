# Finds cairn's dependencies. Required: MPI, Boost.JSON, xxHash, spdlog/fmt.
# Optional (tri-state CAIRN_USE_*): parallel HDF5, CUDA, NCCL, Fortran.

find_package(MPI 3.0 REQUIRED COMPONENTS C CXX)
find_package(Boost 1.81 REQUIRED COMPONENTS json)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(Threads REQUIRED)

find_path(XXHASH_INCLUDE_DIR xxhash.h)
find_library(XXHASH_LIBRARY NAMES xxhash)
if(NOT XXHASH_INCLUDE_DIR OR NOT XXHASH_LIBRARY)
  message(FATAL_ERROR "xxHash not found (header xxhash.h, library libxxhash). "
                      "Install it with scripts/setup.sh (Debian: libxxhash-dev).")
endif()
add_library(cairn_xxhash INTERFACE IMPORTED)
target_include_directories(cairn_xxhash INTERFACE "${XXHASH_INCLUDE_DIR}")
target_link_libraries(cairn_xxhash INTERFACE "${XXHASH_LIBRARY}")

# --- HDF5: must be a parallel build, because cairn always runs over MPI.
set(CAIRN_HAVE_HDF5 0)
if(NOT CAIRN_USE_HDF5 STREQUAL "OFF")
  set(HDF5_PREFER_PARALLEL ON)
  # 1.10.5: H5Dget_chunk_info_by_coord, which finds the chunk of each shard (hdf5/settings.cpp).
  find_package(HDF5 1.10.5 COMPONENTS C)
  if(HDF5_FOUND AND NOT HDF5_IS_PARALLEL)
    message(FATAL_ERROR
      "HDF5 ${HDF5_VERSION} was found (${HDF5_INCLUDE_DIRS}) but it is a serial build, and "
      "cairn writes HDF5 collectively over MPI. Install a parallel HDF5 (Debian: "
      "libhdf5-openmpi-dev), point HDF5_ROOT at one, or set CAIRN_USE_HDF5=OFF.")
  endif()
  cairn_resolve_option(HDF5 "${HDF5_FOUND}")
endif()

# --- CUDA and NCCL (device arrays). nvcc is looked up on PATH, then in /usr/local/cuda.
set(CAIRN_HAVE_CUDA 0)
set(CAIRN_HAVE_NCCL 0)
if(NOT CAIRN_USE_CUDA STREQUAL "OFF")
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX}
     AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc CACHE FILEPATH "CUDA compiler")
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  find_package(CUDAToolkit QUIET)
  set(cuda_found FALSE)
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND)
    set(cuda_found TRUE)
  endif()
  cairn_resolve_option(CUDA "${cuda_found}")
endif()
if(CAIRN_HAVE_CUDA AND NOT CAIRN_USE_NCCL STREQUAL "OFF")
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  set(nccl_found FALSE)
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(nccl_found TRUE)
  endif()
  cairn_resolve_option(NCCL "${nccl_found}")
elseif(CAIRN_USE_NCCL STREQUAL "ON")
  message(FATAL_ERROR "CAIRN_USE_NCCL=ON needs CUDA, which is off or was not found.")
endif()

# --- Compression of stored arrays: zstd (lossless), ZFP (lossy with an error bound).
set(CAIRN_HAVE_ZSTD 0)
if(NOT CAIRN_USE_ZSTD STREQUAL "OFF")
  find_package(zstd QUIET CONFIG)
  set(zstd_found FALSE)
  if(TARGET zstd::libzstd_shared)
    set(zstd_found TRUE)
  endif()
  cairn_resolve_option(ZSTD "${zstd_found}")
endif()
set(CAIRN_HAVE_ZFP 0)
if(NOT CAIRN_USE_ZFP STREQUAL "OFF")
  find_package(zfp QUIET CONFIG)
  set(zfp_found FALSE)
  if(TARGET zfp::zfp)
    set(zfp_found TRUE)
  endif()
  cairn_resolve_option(ZFP "${zfp_found}")
endif()

# --- Fortran (the module over the C ABI).
set(CAIRN_HAVE_FORTRAN 0)
if(NOT CAIRN_USE_FORTRAN STREQUAL "OFF")
  include(CheckLanguage)
  check_language(Fortran)
  set(fortran_found FALSE)
  if(CMAKE_Fortran_COMPILER)
    set(fortran_found TRUE)
  endif()
  cairn_resolve_option(FORTRAN "${fortran_found}")
endif()
# The Fortran module, its tests and example all use Fortran: enable it here, at the top level
# (enable_language must be called in the highest directory of every target that uses it).
# MPI's Fortran bindings are needed for the tests and examples (use mpi / use mpi_f08).
if(CAIRN_HAVE_FORTRAN)
  enable_language(Fortran)
  find_package(MPI 3.0 COMPONENTS Fortran)
  if(NOT MPI_Fortran_FOUND)
    cairn_resolve_option(FORTRAN FALSE)
  endif()
endif()

# --- Warnings and sanitizers for cairn's own targets.
add_library(cairn_warnings INTERFACE)
target_compile_options(cairn_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX,C>:-Wall -Wextra>
  $<$<AND:$<COMPILE_LANGUAGE:CXX,C>,$<BOOL:${CAIRN_WERROR}>>:-Werror>
  # GCC 12 at -O3 reports std::string concatenation as overlapping memcpy (-Wrestrict false
  # positives, fixed in GCC 13), which breaks Release builds under -Werror.
  $<$<AND:$<COMPILE_LANG_AND_ID:CXX,GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>>:-Wno-restrict>)
if(CAIRN_SANITIZE)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX,C>:-fsanitize=${CAIRN_SANITIZE}>
                      $<$<COMPILE_LANGUAGE:CXX,C>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=${CAIRN_SANITIZE})
endif()

# --- libFuzzer targets (tests/fuzz): clang only; cairn's code gets coverage instrumentation.
if(CAIRN_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "CAIRN_BUILD_FUZZERS=ON needs clang (libFuzzer), not "
                        "${CMAKE_CXX_COMPILER_ID}: configure with CMAKE_CXX_COMPILER=clang++ "
                        "and CMAKE_C_COMPILER=clang")
  endif()
  add_compile_options($<$<COMPILE_LANGUAGE:CXX,C>:-fsanitize=fuzzer-no-link>)
endif()
