# Run by `cmake --install` (see cairn_install_hdf5_plugin in CairnHdf5Plugin.cmake): installs
# the zstd filter plugin ${cairn_plugin} into each of HDF5's default plugin directories
# ${cairn_plugin_dirs} that the rule ${cairn_plugin_rule} allows, so that h5py and h5dump find
# it with no HDF5_PLUGIN_PATH:
#   AUTO  the directories under the install prefix (as this install sees it: --prefix counts),
#         e.g. a /usr install or a distribution package staged with DESTDIR;
#   ON    every one of them, wherever it is.
# file(INSTALL) puts DESTDIR in front and records the files in install_manifest.txt.
foreach(dir IN LISTS cairn_plugin_dirs)
  cmake_path(IS_PREFIX CMAKE_INSTALL_PREFIX "${dir}" NORMALIZE under_prefix)
  if(cairn_plugin_rule STREQUAL "ON" OR under_prefix)
    file(INSTALL DESTINATION "${dir}" TYPE MODULE FILES "${cairn_plugin}")
  else()
    message(STATUS "Not installing the HDF5 zstd filter plugin into ${dir}: not under the "
                   "prefix ${CMAKE_INSTALL_PREFIX} (CAIRN_HDF5_PLUGIN_IN_DEFAULT_DIRS=ON would)")
  endif()
endforeach()
