# Installs cairn and makes it findable by consumers:
#   CMake:      find_package(cairn 0.1 REQUIRED) + target_link_libraries(app PRIVATE cairn::cairn)
#               (cairn::cairn_c for C, cairn::cairn_fortran for Fortran)
#   pkg-config: pkg-config --cflags --libs cairn (C++), cairn-c (C), cairn-fortran (Fortran)
# Layout under the prefix: lib/libcairn{,_c,_fortran}.so*, include/cairn/*.hpp, cairn.h and cairn/c/*.h
# (with the generated config.hpp), include/cairn/fortran/cairn.mod,
# lib/cmake/cairn/{cairnConfig,cairnConfigVersion,cairnTargets}.cmake,
# lib/pkgconfig/cairn{,-c,-fortran}.pc, share/doc/cairn (README.md, docs/*.md, BENCHMARKS.md,
# CHANGELOG.md, LICENSE, html/), share/cairn/examples, share/cairn/heat2d{,-srun}.sbatch.
# Install components: see CairnInstall.cmake. Included after lib/ and apps/ by the top-level
# CMakeLists.txt.

include(CMakePackageConfigHelpers)

set(CAIRN_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/cairn" CACHE STRING
    "Where cairnConfig.cmake is installed, relative to the prefix")
set(CAIRN_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig" CACHE STRING
    "Where cairn.pc is installed, relative to the prefix")
mark_as_advanced(CAIRN_INSTALL_CMAKEDIR CAIRN_INSTALL_PKGCONFIGDIR)

get_target_property(_cairn_type cairn TYPE)
if(_cairn_type STREQUAL "STATIC_LIBRARY")
  set(CAIRN_STATIC_LIBRARY 1)
  get_filename_component(CAIRN_XXHASH_LIBDIR "${XXHASH_LIBRARY}" DIRECTORY)
else()
  set(CAIRN_STATIC_LIBRARY 0)
endif()

# An installed libcairn.so finds dependencies that live outside the system directories
# (Spack, modules, a private HDF5) without LD_LIBRARY_PATH. Users may still override it.
if(NOT DEFINED CMAKE_INSTALL_RPATH_USE_LINK_PATH)
  set_target_properties(cairn PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
endif()

# --- Library and headers.
install(TARGETS cairn EXPORT cairnTargets
  RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT cairn_runtime
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT cairn_runtime
          NAMELINK_COMPONENT cairn_development
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT cairn_development
  INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")

# A test build's libcairn carries the fault points: say so to whoever installs it.
if(CAIRN_FAULT_INJECTION)
  install(CODE "message(WARNING \"this libcairn was built with CAIRN_FAULT_INJECTION=ON (named \"
                \"fault points for cairn's crash tests): reconfigure with \"
                \"-DCAIRN_FAULT_INJECTION=OFF for a library to use\")"
          COMPONENT cairn_runtime)
endif()

# The C ABI (libcairn_c, cairn.h is installed with the headers below) and the Fortran module
# (libcairn_fortran; cairn.mod under include/cairn/fortran, for -I or the target's
# include directory).
install(TARGETS cairn_c EXPORT cairnTargets
  RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT cairn_runtime
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT cairn_runtime
          NAMELINK_COMPONENT cairn_development
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT cairn_development)
if(TARGET cairn_fortran)
  install(TARGETS cairn_fortran EXPORT cairnTargets
    RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT cairn_runtime
    LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT cairn_runtime
            NAMELINK_COMPONENT cairn_development
    ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT cairn_development)
  install(DIRECTORY "${PROJECT_BINARY_DIR}/lib/fortran/modules/"
    DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/cairn/fortran" COMPONENT cairn_development
    FILES_MATCHING PATTERN "*.mod")
endif()

# A static libcairn carries its PRIVATE dependencies as link-only entries of the exported
# target: cairn_warnings (no link content; exported only so the reference resolves) and
# cairn_xxhash (re-created by cairnConfig.cmake).
if(CAIRN_STATIC_LIBRARY)
  install(TARGETS cairn_warnings EXPORT cairnTargets)
endif()

# Every public header, including ones later layers add (*_internal.hpp too: they are
# installed but not API), and the generated config.hpp next to them.
install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/cairn"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}" COMPONENT cairn_development
  FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h")
install(FILES "${PROJECT_BINARY_DIR}/include/cairn/config.hpp"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/cairn" COMPONENT cairn_development)

# --- CMake package.
install(EXPORT cairnTargets
  NAMESPACE cairn::
  FILE cairnTargets.cmake
  DESTINATION "${CAIRN_INSTALL_CMAKEDIR}" COMPONENT cairn_development)

configure_package_config_file(
  "${CMAKE_CURRENT_LIST_DIR}/cairnConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/cairnConfig.cmake"
  INSTALL_DESTINATION "${CAIRN_INSTALL_CMAKEDIR}")
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/cairnConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}"
  COMPATIBILITY SameMajorVersion)
install(FILES
  "${PROJECT_BINARY_DIR}/cairnConfig.cmake"
  "${PROJECT_BINARY_DIR}/cairnConfigVersion.cmake"
  DESTINATION "${CAIRN_INSTALL_CMAKEDIR}" COMPONENT cairn_development)

# --- pkg-config.
# The prefix is relative to the .pc file (${pcfiledir}), so the file stays right when the
# tree is installed with `cmake --install --prefix`, DESTDIR, or moved afterwards.
if(IS_ABSOLUTE "${CAIRN_INSTALL_PKGCONFIGDIR}")
  set(CAIRN_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _cairn_pc_up "/prefix/${CAIRN_INSTALL_PKGCONFIGDIR}" "/prefix")
  string(REGEX REPLACE "/$" "" _cairn_pc_up "${_cairn_pc_up}")
  set(CAIRN_PC_PREFIX "\${pcfiledir}/${_cairn_pc_up}")
endif()
foreach(_cairn_dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_cairn_dir}}")
    set(CAIRN_PC_${_cairn_dir} "${CMAKE_INSTALL_${_cairn_dir}}")
  else()
    set(CAIRN_PC_${_cairn_dir} "\${prefix}/${CMAKE_INSTALL_${_cairn_dir}}")
  endif()
endforeach()

# MPI: each .pc requires Open MPI's pkg-config module of its language (ompi-cxx, ompi-c,
# ompi-fort) when pkg-config has one for the MPI cairn was built with. C++ needs ompi-cxx,
# because mpi.h included from C++ pulls in the MPI C++ bindings, which need libmpi_cxx.
# Otherwise (MPICH, Cray, a wrapper-only MPI) the flags FindMPI found for that language are
# written out. CAIRN_PKGCONFIG_MPI_MODULE overrides the choice for cairn.pc (a module name, or
# NONE for the flags); the C and Fortran files then use FindMPI's flags too.
set(_cairn_pc_mpi_family "${CAIRN_PKGCONFIG_MPI_MODULE}")
if(NOT _cairn_pc_mpi_family)
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND AND MPI_CXX_HEADER_DIR)
    file(REAL_PATH "${MPI_CXX_HEADER_DIR}" _cairn_mpi_header_dir)
    foreach(_cairn_candidate IN ITEMS ompi-cxx)
      execute_process(
        COMMAND "${PKG_CONFIG_EXECUTABLE}" --cflags-only-I "${_cairn_candidate}"
        RESULT_VARIABLE _cairn_rc OUTPUT_VARIABLE _cairn_out ERROR_QUIET
        OUTPUT_STRIP_TRAILING_WHITESPACE)
      if(NOT _cairn_rc EQUAL 0)
        continue()
      endif()
      # The module matches when one of its include directories holds the mpi.h we use.
      # pkg-config omits system include directories, so an empty list matches /usr/include.
      separate_arguments(_cairn_out UNIX_COMMAND "${_cairn_out}")
      set(_cairn_dirs "/usr/include")
      foreach(_cairn_flag IN LISTS _cairn_out)
        string(REGEX REPLACE "^-I" "" _cairn_flag "${_cairn_flag}")
        list(APPEND _cairn_dirs "${_cairn_flag}")
      endforeach()
      foreach(_cairn_dir IN LISTS _cairn_dirs)
        if(EXISTS "${_cairn_dir}/mpi.h")
          file(REAL_PATH "${_cairn_dir}" _cairn_dir)
          if(_cairn_dir STREQUAL _cairn_mpi_header_dir)
            set(_cairn_pc_mpi_family "${_cairn_candidate}")
            break()
          endif()
        endif()
      endforeach()
      if(_cairn_pc_mpi_family)
        break()
      endif()
    endforeach()
  endif()
endif()

# _cairn_pc_mpi(<lang> <module>): sets CAIRN_PC_<lang>_REQUIRES to <module> when the MPI
# family was found above and pkg-config knows <module>, else CAIRN_PC_<lang>_MPI_CFLAGS and
# CAIRN_PC_<lang>_MPI_LIBS to FindMPI's flags for <lang>.
function(_cairn_pc_mpi lang module)
  set(requires "")
  set(cflags "")
  set(libs "")
  if(_cairn_pc_mpi_family STREQUAL "ompi-cxx" AND NOT CAIRN_PKGCONFIG_MPI_MODULE)
    execute_process(COMMAND "${PKG_CONFIG_EXECUTABLE}" --exists "${module}"
                    RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
    if(rc EQUAL 0)
      set(requires "${module}")
    endif()
  elseif(lang STREQUAL "CXX" AND _cairn_pc_mpi_family
         AND NOT _cairn_pc_mpi_family STREQUAL "NONE")
    set(requires "${_cairn_pc_mpi_family}")
  endif()
  if(NOT requires)
    foreach(opt IN LISTS MPI_${lang}_COMPILE_OPTIONS)
      string(APPEND cflags " ${opt}")
    endforeach()
    foreach(def IN LISTS MPI_${lang}_COMPILE_DEFINITIONS)
      string(APPEND cflags " -D${def}")
    endforeach()
    foreach(dir IN LISTS MPI_${lang}_INCLUDE_DIRS)
      string(APPEND cflags " -I${dir}")
    endforeach()
    foreach(flag IN LISTS MPI_${lang}_LINK_FLAGS)
      string(APPEND libs " ${flag}")
    endforeach()
    foreach(lib IN LISTS MPI_${lang}_LIBRARIES)
      string(APPEND libs " ${lib}")
    endforeach()
  endif()
  set(CAIRN_PC_${lang}_REQUIRES "${requires}" PARENT_SCOPE)
  set(CAIRN_PC_${lang}_MPI_CFLAGS "${cflags}" PARENT_SCOPE)
  set(CAIRN_PC_${lang}_MPI_LIBS "${libs}" PARENT_SCOPE)
endfunction()

_cairn_pc_mpi(CXX ompi-cxx)
_cairn_pc_mpi(C ompi-c)
if(CAIRN_HAVE_FORTRAN)
  _cairn_pc_mpi(Fortran ompi-fort)
endif()
set(CAIRN_PC_REQUIRES "${CAIRN_PC_CXX_REQUIRES}")
set(_cairn_pc_mpi_cflags "${CAIRN_PC_CXX_MPI_CFLAGS}")
set(_cairn_pc_mpi_libs "${CAIRN_PC_CXX_MPI_LIBS}")
if(CAIRN_PC_REQUIRES)
  message(STATUS "cairn.pc: MPI from pkg-config module '${CAIRN_PC_REQUIRES}'")
else()
  message(STATUS "cairn.pc: MPI flags from FindMPI (no pkg-config module used)")
endif()

# _cairn_pc_link_files(<out-var> <target>): the library files a program must link to use the
# imported <target>: its own file and those of the imported targets it links (Boost::json
# brings Boost::container), as $<...> expressions, plus plain flags and paths found on the way.
function(_cairn_pc_link_files out target)
  set(files "")
  set(seen "")
  set(queue "${target}")
  while(queue)
    list(POP_FRONT queue t)
    if(t IN_LIST seen)
      continue()
    endif()
    list(APPEND seen "${t}")
    get_target_property(type "${t}" TYPE)
    if(type MATCHES "^(SHARED|STATIC)_LIBRARY$")
      list(APPEND files "$<TARGET_LINKER_FILE:${t}>")
    elseif(type STREQUAL "UNKNOWN_LIBRARY")
      list(APPEND files "$<TARGET_FILE:${t}>")
    endif()
    get_target_property(deps "${t}" INTERFACE_LINK_LIBRARIES)
    foreach(dep IN LISTS deps)
      if(TARGET "${dep}")
        list(APPEND queue "${dep}")
      elseif(dep MATCHES "^-" OR IS_ABSOLUTE "${dep}")
        list(APPEND files "${dep}")
      endif()
    endforeach()
  endwhile()
  list(JOIN files " " files)
  set(${out} "${files}" PARENT_SCOPE)
endfunction()

# Boost.JSON has no .pc file: name its include directory and library files directly.
# Compiler-implicit include directories (/usr/include) are left out: an explicit -I for
# them breaks #include_next in the C++ standard library.
set(CAIRN_PC_CFLAGS "${_cairn_pc_mpi_cflags}")
foreach(_cairn_dir IN LISTS Boost_INCLUDE_DIRS)
  if(NOT _cairn_dir IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES)
    string(APPEND CAIRN_PC_CFLAGS " -I${_cairn_dir}")
  endif()
endforeach()
_cairn_pc_link_files(_cairn_boost_libs Boost::json)
set(CAIRN_PC_LIBS "${_cairn_pc_mpi_libs} ${_cairn_boost_libs}")

# Static libcairn: its private dependencies go to Libs.private (pkg-config --static).
set(CAIRN_PC_LIBS_PRIVATE "")
if(CAIRN_STATIC_LIBRARY)
  _cairn_pc_link_files(_cairn_spdlog_libs spdlog::spdlog)
  _cairn_pc_link_files(_cairn_fmt_libs fmt::fmt)
  set(CAIRN_PC_LIBS_PRIVATE "${_cairn_spdlog_libs} ${_cairn_fmt_libs} ${XXHASH_LIBRARY}")
  if(CAIRN_HAVE_HDF5)
    foreach(_cairn_lib IN LISTS HDF5_C_LIBRARIES)
      string(APPEND CAIRN_PC_LIBS_PRIVATE " ${_cairn_lib}")
    endforeach()
  endif()
  if(CAIRN_HAVE_CUDA)
    string(APPEND CAIRN_PC_LIBS_PRIVATE " ${CUDA_cudart_LIBRARY}")
  endif()
  if(CAIRN_HAVE_NCCL)
    string(APPEND CAIRN_PC_LIBS_PRIVATE " ${NCCL_LIBRARY}")
  endif()
  string(APPEND CAIRN_PC_LIBS_PRIVATE " -pthread -lstdc++")
endif()

# cairn-c.pc and cairn-fortran.pc: the C ABI (libcairn_c) and the Fortran module
# (libcairn_fortran, cairn.mod). Both link libcairn by name too: it is libcairn_c's own
# dependency, and naming it lets the linker resolve it from -L without an rpath-link. A static
# libcairn brings its C++ dependencies along in Libs.private.
set(CAIRN_PC_C_LIBS_PRIVATE "")
set(CAIRN_PC_C_REQUIRES_PRIVATE "")
if(CAIRN_STATIC_LIBRARY)
  set(CAIRN_PC_C_LIBS_PRIVATE "${CAIRN_PC_LIBS} ${CAIRN_PC_LIBS_PRIVATE}")
  set(CAIRN_PC_C_REQUIRES_PRIVATE "${CAIRN_PC_REQUIRES}")  # libcairn's MPI C++ libraries
endif()
set(CAIRN_PC_FORTRAN_LIBS_PRIVATE "${CAIRN_PC_C_LIBS_PRIVATE}")

# Two steps: configure_file fills in @VARIABLES@, file(GENERATE) the $<...> expressions.
set(_cairn_pc_files cairn cairn-c)
if(TARGET cairn_fortran)
  list(APPEND _cairn_pc_files cairn-fortran)
endif()
foreach(_cairn_pc IN LISTS _cairn_pc_files)
  configure_file("${CMAKE_CURRENT_LIST_DIR}/${_cairn_pc}.pc.in"
                 "${PROJECT_BINARY_DIR}/${_cairn_pc}.pc.in" @ONLY)
  file(GENERATE OUTPUT "${PROJECT_BINARY_DIR}/${_cairn_pc}.pc"
       INPUT "${PROJECT_BINARY_DIR}/${_cairn_pc}.pc.in")
  install(FILES "${PROJECT_BINARY_DIR}/${_cairn_pc}.pc"
    DESTINATION "${CAIRN_INSTALL_PKGCONFIGDIR}" COMPONENT cairn_development)
endforeach()

# --- Documents and examples (share/doc/cairn, share/cairn/examples).
install(FILES "${PROJECT_SOURCE_DIR}/README.md" "${PROJECT_SOURCE_DIR}/LICENSE"
  "${PROJECT_SOURCE_DIR}/BENCHMARKS.md" "${PROJECT_SOURCE_DIR}/CHANGELOG.md"
  DESTINATION "${CMAKE_INSTALL_DOCDIR}" COMPONENT cairn_docs)
# The pages the README links to, in docs/ beside it so that its links resolve; mainpage*.md are
# the API reference's first pages, built into html/.
install(DIRECTORY "${PROJECT_SOURCE_DIR}/docs/" DESTINATION "${CMAKE_INSTALL_DOCDIR}/docs"
  COMPONENT cairn_docs FILES_MATCHING PATTERN "*.md" PATTERN "mainpage*.md" EXCLUDE)
install(FILES
  "${PROJECT_SOURCE_DIR}/apps/quickstart/quickstart.cpp"
  "${PROJECT_SOURCE_DIR}/apps/quickstart/quickstart_c.c"
  "${PROJECT_SOURCE_DIR}/apps/quickstart/quickstart_fortran.f90"
  "${PROJECT_SOURCE_DIR}/apps/examples/heat_c.c"
  "${PROJECT_SOURCE_DIR}/apps/examples/heat_fortran.f90"
  DESTINATION "${CAIRN_INSTALL_DATADIR}/examples" COMPONENT cairn_examples)
# The Slurm batch scripts of docs/slurm.md, as templates.
install(PROGRAMS
  "${PROJECT_SOURCE_DIR}/apps/heat2d/slurm/heat2d.sbatch"
  "${PROJECT_SOURCE_DIR}/apps/heat2d/slurm/heat2d-srun.sbatch"
  DESTINATION "${CAIRN_INSTALL_DATADIR}" COMPONENT cairn_examples)

unset(_cairn_type)
