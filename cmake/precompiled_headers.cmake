# A precompiled header for the test code: the standard and third-party headers that most test
# units include (nlohmann/json, yaml-cpp, spdlog and fmt, <regex>, <filesystem>, the containers,
# GoogleTest) are parsed once per tree instead of once per test batch. One owner, an object library
# that compiles nothing but its header, with the flags every test unit has (diagnose_third_party's
# definitions, the tests' -O1); a unit's own definitions are names the headers never mention.
# Only the tests use it: a precompiled header records the build directory's absolute path, and
# ccache hashes it into the key of every unit that includes it, so a unit using one never hits the
# cache from a clone at another path (measured: a consumer compiled in a second clone missed, in the
# first clone again it hit). The engine's, the CLI's, the tools' and the fuzz targets' objects do hit
# there (scripts/compiler-cache.sh); the tests' never did (their flags name the clone's fixtures),
# so for them the header only saves time, and only with clang: dag_tests' two batches took 57.2 ->
# 53.4 s of CPU (clang 14, the sanitized tree) against 3.9 s for the header, once per tree, but 34.3
# -> 33.9 s with gcc 12 (RelWithDebInfo, -O1 test code) against 8.3 s for the header: gcc spends its
# time in code generation, not in parsing. Hence on by default for clang only (the sanitized tree).
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  set(DIAGNOSE_PCH_DEFAULT ON)
else()
  set(DIAGNOSE_PCH_DEFAULT OFF)
endif()
option(DIAGNOSE_PCH "Precompile the headers most test units include (faster test builds with clang)" ${DIAGNOSE_PCH_DEFAULT})
set(DIAGNOSE_TEST_PCH_HEADERS
  <algorithm> <chrono> <cmath> <cstdint> <cstdio> <filesystem> <fstream> <functional> <map>
  <memory> <optional> <regex> <set> <sstream> <string> <string_view> <thread> <utility> <vector>
  <nlohmann/json.hpp> <yaml-cpp/yaml.h> <spdlog/spdlog.h> <fmt/format.h> <gtest/gtest.h> <gmock/gmock.h>)

# diagnose_test_precompiled(TARGET): TARGET, compiled with ${DIAGNOSE_TEST_CODE_OPTIONS} and linking
# GoogleTest (tests/CMakeLists.txt), includes the tests' precompiled header.
function(diagnose_test_precompiled target)
  if(NOT DIAGNOSE_PCH)
    return()
  endif()
  set(owner diagnose_test_pch)
  if(NOT TARGET ${owner})
    set(source ${PROJECT_BINARY_DIR}/pch/${owner}.cc)
    file(CONFIGURE OUTPUT ${source} CONTENT "// Compiles ${owner}'s precompiled header (cmake/precompiled_headers.cmake).\n")
    add_library(${owner} OBJECT ${source})
    target_link_libraries(${owner} PRIVATE diagnose_third_party GTest::gtest GTest::gmock)
    target_compile_options(${owner} PRIVATE ${DIAGNOSE_TEST_CODE_OPTIONS})
    target_precompile_headers(${owner} PRIVATE ${DIAGNOSE_TEST_PCH_HEADERS})
  endif()
  target_precompile_headers(${target} REUSE_FROM ${owner})
  # gcc would otherwise compile without a header that stopped matching and only warn; a full build
  # of this tree prints no such warning, so one appearing is a change to look at, not to ignore.
  target_compile_options(${target} PRIVATE $<$<CXX_COMPILER_ID:GNU>:-Werror=invalid-pch>)
endfunction()
