# SPDX-License-Identifier: Apache-2.0
# The headers `cmake --install` ships: exactly the closure of the entry
# headers under the #include "encore/..." lines, so that a private header
# (every one lives under an internal/ folder, e.g. core/internal/log.h) is
# never installed and a public one never includes something that is not.
# tools/bars.py checks that the headers outside internal/ are exactly these.
# tools/cmake/installed_headers/ checks the installed tree the same way,
# from the other side, and compiles every header in it alone.
#
# Also used by that check (with a different ROOTS): keep it free of
# anything but plain CMake.

# The file behind include path `inc` ("encore/core/status.h"), searched in
# the folders of `roots` (each holds encore/...); empty if none has it.
function(encore_header_file out inc)
  set(_file "")
  foreach(_root IN LISTS ENCORE_HEADER_ROOTS)
    if(EXISTS "${_root}/${inc}")
      set(_file "${_root}/${inc}")
      break()
    endif()
  endforeach()
  set(${out} "${_file}" PARENT_SCOPE)
endfunction()

# `out`: the include paths reached from the entries (include paths too),
# entries first. A public header that includes a header no root has, a
# quoted header outside encore/, anything under internal/, or spdlog or fmt
# (the library carries them privately) stops the configure.
function(encore_public_header_closure out)
  set(_todo ${ARGN})
  set(_seen "")
  while(_todo)
    list(POP_FRONT _todo _inc)
    if(_inc IN_LIST _seen)
      continue()
    endif()
    list(APPEND _seen "${_inc}")
    encore_header_file(_file "${_inc}")
    if(NOT _file)
      message(FATAL_ERROR "encore: entry header ${_inc} is not in ${ENCORE_HEADER_ROOTS}")
    endif()
    if(_inc MATCHES "/internal/")
      message(FATAL_ERROR "encore: ${_inc} is private (internal/) but a public header includes it")
    endif()
    file(STRINGS "${_file}" _lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]")
    foreach(_line IN LISTS _lines)
      if(_line MATCHES "<(spdlog|fmt)/")
        message(FATAL_ERROR "encore: public header ${_inc} includes spdlog or fmt: ${_line}")
      endif()
      if(NOT _line MATCHES "\"([^\"]+)\"")
        continue()
      endif()
      set(_dep "${CMAKE_MATCH_1}")
      if(NOT _dep MATCHES "^encore/")
        message(FATAL_ERROR "encore: public header ${_inc} includes \"${_dep}\", which an installed encore "
                            "cannot provide (public headers include encore/<folder>/<file>.h only)")
      endif()
      encore_header_file(_dep_file "${_dep}")
      if(NOT _dep_file)
        message(FATAL_ERROR "encore: public header ${_inc} includes ${_dep}, which is not in ${ENCORE_HEADER_ROOTS}")
      endif()
      list(APPEND _todo "${_dep}")
    endforeach()
  endwhile()
  set(${out} "${_seen}" PARENT_SCOPE)
endfunction()
