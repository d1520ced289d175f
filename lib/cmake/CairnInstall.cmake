# Where an install puts what, by component (cmake --install BUILD --component NAME):
#   cairn_runtime      the shared libraries (libcairn, libcairn_c, libcairn_fortran)
#   cairn_development  headers, cairn.mod, the CMake package, the pkg-config files, the
#                      namelinks and static libraries
#   cairn_tools        the programs: the cairn tool and heat2d (bin/)
#   cairn_docs         README.md and its docs pages, BENCHMARKS.md, CHANGELOG.md, LICENSE and
#                      the API reference (share/doc/cairn)
#   cairn_examples     the C++, C and Fortran examples and quickstarts, and the Slurm batch
#                      script (share/cairn)
# Included right after GNUInstallDirs, before any target is installed.

set(CAIRN_INSTALL_DATADIR "${CMAKE_INSTALL_DATADIR}/cairn" CACHE STRING
    "Where the examples and the Slurm template are installed, relative to the prefix")
mark_as_advanced(CAIRN_INSTALL_DATADIR)

# The RUNPATH of installed programs: the library directory relative to the program's own
# ($ORIGIN/../lib, or ../lib64, ../lib/x86_64-linux-gnu: whatever CMAKE_INSTALL_LIBDIR is), so
# an installed tree runs without LD_LIBRARY_PATH, also after it is moved or copied elsewhere.
# Absolute install directories get the absolute library directory instead.
if(IS_ABSOLUTE "${CMAKE_INSTALL_BINDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(CAIRN_PROGRAM_RPATH "${CMAKE_INSTALL_FULL_LIBDIR}")
else()
  file(RELATIVE_PATH _cairn_bin_to_lib "/prefix/${CMAKE_INSTALL_BINDIR}"
       "/prefix/${CMAKE_INSTALL_LIBDIR}")
  set(CAIRN_PROGRAM_RPATH "$ORIGIN/${_cairn_bin_to_lib}")
  unset(_cairn_bin_to_lib)
endif()

# cairn_install_program(<target>...): installs programs into bin/ (component cairn_tools) with
# the RUNPATH above, plus the directories of dependencies outside the system ones (a Spack or
# module HDF5, CUDA) that they link. CMAKE_SKIP_INSTALL_RPATH=ON still removes it all.
function(cairn_install_program)
  foreach(target IN LISTS ARGN)
    set_target_properties(${target} PROPERTIES
      INSTALL_RPATH "${CAIRN_PROGRAM_RPATH}"
      INSTALL_RPATH_USE_LINK_PATH ON)
  endforeach()
  install(TARGETS ${ARGN}
    RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT cairn_tools)
endfunction()
