# Tri-state options: ON (required, configure fails when missing), OFF, AUTO (use if found).
# The result of the search is CAIRN_HAVE_<DEP> (0 or 1), written to cairn/config.hpp.
function(cairn_option name description default)
  set(${name} ${default} CACHE STRING "${description} (ON/OFF/AUTO)")
  set_property(CACHE ${name} PROPERTY STRINGS ON OFF AUTO)
  string(TOUPPER "${${name}}" value)
  if(NOT value MATCHES "^(ON|OFF|AUTO)$")
    message(FATAL_ERROR "${name} must be ON, OFF or AUTO, not '${${name}}'")
  endif()
endfunction()

# cairn_resolve_option(<dep> <found>): sets CAIRN_HAVE_<dep> in the parent scope from the
# option CAIRN_USE_<dep> and whether the dependency was found; fails when ON but not found.
function(cairn_resolve_option dep found)
  string(TOUPPER "${CAIRN_USE_${dep}}" want)
  if(want STREQUAL "OFF")
    set(CAIRN_HAVE_${dep} 0 PARENT_SCOPE)
  elseif(found)
    set(CAIRN_HAVE_${dep} 1 PARENT_SCOPE)
  elseif(want STREQUAL "ON")
    message(FATAL_ERROR "CAIRN_USE_${dep}=ON but ${dep} was not found. "
                        "Install it (scripts/setup.sh) or set CAIRN_USE_${dep}=AUTO or OFF.")
  else()
    set(CAIRN_HAVE_${dep} 0 PARENT_SCOPE)
  endif()
endfunction()
