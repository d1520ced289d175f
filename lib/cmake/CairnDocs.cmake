# The API reference: target cairn_docs runs Doxygen over include/cairn (docs/Doxyfile.in: C++
# and the C ABI) into <build>/docs/html and, with Fortran, over the module cairn
# (docs/Doxyfile-fortran.in) into <build>/docs/html/fortran. Undocumented public declarations
# are warnings; with CAIRN_WERROR they fail the target.
# CAIRN_BUILD_DOCS (ON by default) builds it with 'all' and installs it in
# <docdir>/html (share/doc/cairn/html, component cairn_docs) when Doxygen and a Python 3
# interpreter (the input filters) are found; without them the build goes on without it, and
# the configure summary says so. Included before lib/ and tests/: it only sets variables and
# rules, and tests/install checks the installed reference when CAIRN_HAVE_DOCS is 1.
find_package(Doxygen QUIET)
find_package(Python3 COMPONENTS Interpreter QUIET)
set(CAIRN_HAVE_DOCS 0)
if(CAIRN_BUILD_DOCS AND DOXYGEN_FOUND AND Python3_Interpreter_FOUND)
  set(CAIRN_HAVE_DOCS 1)
endif()
# Without CAIRN_BUILD_DOCS the target still exists (scripts/test.sh builds it explicitly).
if(DOXYGEN_FOUND AND Python3_Interpreter_FOUND)
  set(CAIRN_DOCS_OUTPUT_DIR "${PROJECT_BINARY_DIR}/docs")
  # FAIL_ON_WARNINGS: every warning is reported, then Doxygen exits non-zero.
  set(CAIRN_DOCS_WARN_AS_ERROR NO)
  if(CAIRN_WERROR)
    set(CAIRN_DOCS_WARN_AS_ERROR FAIL_ON_WARNINGS)
  endif()
  configure_file("${PROJECT_SOURCE_DIR}/docs/Doxyfile.in" "${CAIRN_DOCS_OUTPUT_DIR}/Doxyfile"
                 @ONLY)
  file(GLOB _cairn_doc_inputs CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/include/cairn/*.hpp"
       "${PROJECT_SOURCE_DIR}/include/cairn/*.h" "${PROJECT_SOURCE_DIR}/include/cairn/c/*.h")
  set(_cairn_docs_commands "")
  if(CAIRN_HAVE_FORTRAN)
    # The module as the compiler sees it: cairn.F90 with its .inc files and the generic
    # interfaces that lib/fortran/arrays.cmake generates (docs/doxygen_fortran_filter.py).
    set(CAIRN_DOCS_FORTRAN_GENERATED "${PROJECT_BINARY_DIR}/lib/fortran/generated")
    configure_file("${PROJECT_SOURCE_DIR}/docs/Doxyfile-fortran.in"
                   "${CAIRN_DOCS_OUTPUT_DIR}/Doxyfile-fortran" @ONLY)
    file(GLOB _cairn_fortran_inputs CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/lib/fortran/*.F90"
         "${PROJECT_SOURCE_DIR}/lib/fortran/*.inc" "${PROJECT_SOURCE_DIR}/lib/fortran/arrays.cmake")
    list(APPEND _cairn_doc_inputs ${_cairn_fortran_inputs}
         "${PROJECT_SOURCE_DIR}/docs/doxygen_fortran_filter.py"
         "${PROJECT_SOURCE_DIR}/docs/mainpage_fortran.md"
         "${CAIRN_DOCS_OUTPUT_DIR}/Doxyfile-fortran")
    # (No ';' in the script: this list would split it.)
    set(_cairn_docs_commands
      COMMAND sh -c "\"$0\" Doxyfile-fortran || (rm -f html/index.html && exit 1)"
              "${DOXYGEN_EXECUTABLE}")
    unset(_cairn_fortran_inputs)
  endif()
  set(_cairn_docs_all "")
  if(CAIRN_HAVE_DOCS)
    set(_cairn_docs_all ALL)
  endif()
  # Doxygen does not remove pages of declarations that are gone: start from an empty html/.
  add_custom_command(
    OUTPUT "${CAIRN_DOCS_OUTPUT_DIR}/html/index.html"
    COMMAND "${CMAKE_COMMAND}" -E rm -rf "${CAIRN_DOCS_OUTPUT_DIR}/html"
    # A failed run must not leave an index.html that makes the next build skip it.
    COMMAND sh -c "\"$0\" Doxyfile || { rm -f html/index.html; exit 1; }"
            "${DOXYGEN_EXECUTABLE}"
    ${_cairn_docs_commands}
    DEPENDS ${_cairn_doc_inputs} "${CAIRN_DOCS_OUTPUT_DIR}/Doxyfile"
            "${PROJECT_SOURCE_DIR}/docs/doxygen_c_filter.py"
            "${PROJECT_SOURCE_DIR}/docs/mainpage.md"
    WORKING_DIRECTORY "${CAIRN_DOCS_OUTPUT_DIR}"
    COMMENT "API reference (Doxygen): ${CAIRN_DOCS_OUTPUT_DIR}/html/index.html"
    VERBATIM)
  add_custom_target(cairn_docs ${_cairn_docs_all}
    DEPENDS "${CAIRN_DOCS_OUTPUT_DIR}/html/index.html")
  if(CAIRN_HAVE_DOCS)
    install(DIRECTORY "${CAIRN_DOCS_OUTPUT_DIR}/html"
      DESTINATION "${CMAKE_INSTALL_DOCDIR}" COMPONENT cairn_docs)
  endif()
  unset(_cairn_doc_inputs)
  unset(_cairn_docs_all)
  unset(_cairn_docs_commands)
endif()
