# The API reference: target cairn_docs runs Doxygen (docs/Doxyfile.in) over include/cairn and
# writes <build>/docs/html. Undocumented public declarations are warnings; with CAIRN_WERROR
# they fail the target (scripts/test.sh builds it). CAIRN_BUILD_DOCS=ON builds it with 'all'
# and installs it in share/doc/cairn/html (component cairn_docs); it then needs Doxygen.
find_package(Doxygen QUIET)
find_package(Python3 COMPONENTS Interpreter QUIET)
set(CAIRN_HAVE_DOCS 0)
if(DOXYGEN_FOUND AND Python3_Interpreter_FOUND)
  set(CAIRN_HAVE_DOCS 1)
elseif(CAIRN_BUILD_DOCS)
  message(FATAL_ERROR "CAIRN_BUILD_DOCS=ON needs Doxygen and a Python 3 interpreter (its "
                      "input filter for the C headers); install them (Debian: doxygen python3) or "
                      "set CAIRN_BUILD_DOCS=OFF.")
endif()

if(CAIRN_HAVE_DOCS)
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
  set(_cairn_docs_all "")
  if(CAIRN_BUILD_DOCS)
    set(_cairn_docs_all ALL)
  endif()
  # Doxygen does not remove pages of declarations that are gone: start from an empty html/.
  add_custom_command(
    OUTPUT "${CAIRN_DOCS_OUTPUT_DIR}/html/index.html"
    COMMAND "${CMAKE_COMMAND}" -E rm -rf "${CAIRN_DOCS_OUTPUT_DIR}/html"
    # A failed run must not leave an index.html that makes the next build skip it.
    COMMAND sh -c "\"$0\" Doxyfile || { rm -f html/index.html; exit 1; }"
            "${DOXYGEN_EXECUTABLE}"
    DEPENDS ${_cairn_doc_inputs} "${CAIRN_DOCS_OUTPUT_DIR}/Doxyfile"
            "${PROJECT_SOURCE_DIR}/docs/doxygen_c_filter.py"
            "${PROJECT_SOURCE_DIR}/docs/mainpage.md"
    WORKING_DIRECTORY "${CAIRN_DOCS_OUTPUT_DIR}"
    COMMENT "API reference (Doxygen): ${CAIRN_DOCS_OUTPUT_DIR}/html/index.html"
    VERBATIM)
  add_custom_target(cairn_docs ${_cairn_docs_all}
    DEPENDS "${CAIRN_DOCS_OUTPUT_DIR}/html/index.html")
  if(CAIRN_BUILD_DOCS)
    install(DIRECTORY "${CAIRN_DOCS_OUTPUT_DIR}/html"
      DESTINATION "${CMAKE_INSTALL_DOCDIR}" COMPONENT cairn_docs)
  endif()
  unset(_cairn_doc_inputs)
  unset(_cairn_docs_all)
endif()
