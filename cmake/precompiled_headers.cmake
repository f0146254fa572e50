# Precompiled headers: the standard and third-party headers that most units include (nlohmann/json,
# yaml-cpp, spdlog and fmt, <regex>, <filesystem>, the containers; GoogleTest for the tests) are
# parsed once per tree instead of once per unity batch, the largest share of a cold build's CPU.
# gcc and clang use a precompiled header only where it was built with the same sanitizers, coverage
# instrumentation and macros (gcc compiles without it otherwise: -Werror=invalid-pch below makes
# that an error), hence one owner per set of flags, each an object library that compiles
# nothing but its header:
#   diagnose_pch        the engine's modules and the fuzz targets (the fuzz tree's coverage flags)
#   diagnose_plain_pch  the CLI, the tools and the benchmarks (only a fuzz tree builds it: elsewhere
#                       their flags are the engine's and they use diagnose_pch)
#   diagnose_test_pch   the test code (its -O1, GoogleTest)
# An owner has only the definitions that every user has (diagnose_third_party's); users add their
# own, whose names the headers never mention. -DDIAGNOSE_PCH=OFF builds without them.
option(DIAGNOSE_PCH "Precompile the headers most units include (faster cold builds)" ON)
set(DIAGNOSE_PCH_HEADERS
  <algorithm> <chrono> <cmath> <cstdint> <cstdio> <filesystem> <fstream> <functional> <map>
  <memory> <optional> <regex> <set> <sstream> <string> <string_view> <thread> <utility> <vector>
  <nlohmann/json.hpp> <yaml-cpp/yaml.h> <spdlog/spdlog.h> <fmt/format.h>)
set(DIAGNOSE_TEST_PCH_HEADERS ${DIAGNOSE_PCH_HEADERS} <gtest/gtest.h> <gmock/gmock.h>)

function(diagnose_pch_owner owner)
  cmake_parse_arguments(O "" "" "HEADERS;LIBS;OPTIONS" ${ARGN})
  set(source ${PROJECT_BINARY_DIR}/pch/${owner}.cc)
  file(CONFIGURE OUTPUT ${source} CONTENT "// Compiles ${owner}'s precompiled header (cmake/precompiled_headers.cmake).\n")
  add_library(${owner} OBJECT ${source})
  target_link_libraries(${owner} PRIVATE diagnose_third_party ${O_LIBS})
  target_compile_options(${owner} PRIVATE ${O_OPTIONS})
  target_precompile_headers(${owner} PRIVATE ${O_HEADERS})
endfunction()

# diagnose_precompiled(TARGET [INSTRUMENTED | TEST]): TARGET includes the precompiled headers of
# the owner its flags match; INSTRUMENTED for units compiled with ${DIAGNOSE_FUZZ_COVERAGE}, TEST for
# units compiled with ${DIAGNOSE_TEST_CODE_OPTIONS} and linking GoogleTest (tests/CMakeLists.txt).
function(diagnose_precompiled target)
  cmake_parse_arguments(U "INSTRUMENTED;TEST" "" "" ${ARGN})
  if(NOT DIAGNOSE_PCH)
    return()
  endif()
  if(U_TEST)
    set(owner diagnose_test_pch)
    if(NOT TARGET ${owner})
      diagnose_pch_owner(${owner} HEADERS ${DIAGNOSE_TEST_PCH_HEADERS}
                         LIBS GTest::gtest GTest::gmock OPTIONS ${DIAGNOSE_TEST_CODE_OPTIONS})
    endif()
  elseif(U_INSTRUMENTED OR NOT DIAGNOSE_FUZZ_COVERAGE)
    set(owner diagnose_pch)
    if(NOT TARGET ${owner})
      diagnose_pch_owner(${owner} HEADERS ${DIAGNOSE_PCH_HEADERS} OPTIONS ${DIAGNOSE_FUZZ_COVERAGE})
    endif()
  else()
    set(owner diagnose_plain_pch)
    if(NOT TARGET ${owner})
      diagnose_pch_owner(${owner} HEADERS ${DIAGNOSE_PCH_HEADERS})
    endif()
  endif()
  target_precompile_headers(${target} REUSE_FROM ${owner})
  # gcc would otherwise compile without a header that stopped matching and only warn; a full build
  # of this tree prints no such warning, so one appearing is a change to look at, not to ignore.
  target_compile_options(${target} PRIVATE $<$<CXX_COMPILER_ID:GNU>:-Werror=invalid-pch>)
endfunction()
