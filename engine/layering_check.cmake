# The layering check, run as a build step every engine module, the CLI and the tools wait for
# (engine/CMakeLists.txt), so a backward include fails the build itself, and again as the
# `engine_layering` test.
#
# Each unit is an engine module (engine/<m>/) or a tree above the engine (src/, tools/<t>/). Every
# `#include "engine/<m>/..."`, `"src/..."` or `"tools/<t>/..."` in a unit's *.h and *.cc must name the
# unit itself or a unit it depends on (directly or through others) in the table LAYERS, one
# `unit:dep,dep` line per unit, a unit after its dependencies; every engine/ subdirectory must be in
# that table. Run as
#   cmake -DLAYERS=<build>/engine_layers.txt -DROOT=<src> [-DSTAMP=<file>] -P layering_check.cmake
cmake_minimum_required(VERSION 3.16)
file(STRINGS ${LAYERS} lines)
set(units "")
foreach(line ${lines})
  string(REGEX MATCH "^([a-z_/]+):(.*)$" _ "${line}")
  set(u ${CMAKE_MATCH_1})
  string(REPLACE "," ";" d "${CMAKE_MATCH_2}")
  set(direct_${u} ${d})
  list(APPEND units ${u})
endforeach()

# Transitive closure, in table order (a unit is declared after its dependencies).
foreach(u ${units})
  set(reach_${u} ${direct_${u}})
  foreach(d ${direct_${u}})
    list(APPEND reach_${u} ${reach_${d}})
  endforeach()
  list(REMOVE_DUPLICATES reach_${u})
endforeach()

set(violations "")
file(GLOB dirs LIST_DIRECTORIES true ${ROOT}/engine/*)
foreach(dir ${dirs})
  get_filename_component(m ${dir} NAME)
  if(IS_DIRECTORY ${dir} AND NOT m IN_LIST units)
    string(APPEND violations "engine/${m}/ is not a module of engine/CMakeLists.txt (add a diagnose_module line)\n")
  endif()
endforeach()

foreach(u ${units})
  if(u MATCHES "/" OR u STREQUAL "src")
    set(dir ${ROOT}/${u})
  else()
    set(dir ${ROOT}/engine/${u})
  endif()
  file(GLOB files ${dir}/*.h ${dir}/*.cc)
  foreach(f ${files})
    file(STRINGS ${f} includes REGEX "^#include \"(engine/[a-z_]+|src|tools/[a-z_]+)/")
    foreach(inc ${includes})
      string(REGEX MATCH "\"((engine/([a-z_]+))|src|tools/[a-z_]+)/[^\"]+" path "${inc}")
      string(SUBSTRING "${path}" 1 -1 path)
      if(CMAKE_MATCH_3)
        set(target ${CMAKE_MATCH_3})
      else()
        set(target ${CMAKE_MATCH_1})
      endif()
      if(target STREQUAL u OR target IN_LIST reach_${u})
        continue()
      endif()
      file(RELATIVE_PATH rel ${ROOT} ${f})
      string(REPLACE ";" " " declared "${direct_${u}}")
      string(APPEND violations "${rel}: includes ${path}, but '${u}' does not depend on '${target}' "
                               "(declared: ${u} DEPS ${declared})\n")
    endforeach()
  endforeach()
endforeach()
if(violations)
  message(FATAL_ERROR "backward or undeclared includes:\n${violations}")
endif()
list(LENGTH units n)
message(STATUS "layering: ${n} units (engine modules, src, tools), every include follows the table")
if(STAMP)
  file(TOUCH ${STAMP})
endif()
