# Sourced by scripts/test.sh and scripts/sanitize.sh before they configure a tree: sets
# `compiler_cache`, the cmake arguments that compile through ccache where it is installed
# (scripts/install-deps.sh installs it). A machine that keeps its home directory between CI runs then
# recompiles only the units a change touched, in both trees: the build is most of a cold .ci/run's
# CPU. A cache hit is the object the same command compiled before, so every test still runs against
# what the sources say. DIAGNOSE_CCACHE=0 compiles without it (and takes an earlier tree off it).
#   CCACHE_BASEDIR: paths inside the clone are hashed relative to the build directory, so a fresh
#     clone at another path reuses the objects of units whose flags name no path of their own (the
#     engine and the CLI; the tests' flags name the clone's fixtures, so they compile again there),
#     when they compile one by one: a unity batch names its sources by absolute path (CCACHE_DEPEND).
#   CCACHE_NOHASHDIR: with line tables (-g1, -gline-tables-only) ccache would otherwise key every
#     object on the build directory; a reused object names the directory that first compiled it as
#     its DW_AT_comp_dir, and stack traces still name the source file and line.
#   CCACHE_SLOPPINESS: units that include a precompiled header (cmake/precompiled_headers.cmake) are
#     cached only with pch_defines,time_macros (ccache's manual, "Precompiled headers"); the header's
#     own compile is cached too, so a consumer's key (which hashes the header) matches again.
#   CCACHE_DEPEND: a miss no longer runs the preprocessor once more just to key the object: the key
#     is the direct mode's (the command, the source and every header the compiler's -MD output
#     names, which Ninja asks for anyway). That pass costs 10.5 s of CPU over the main tree's 60 units
#     (gcc 12) and 13.5 s over the sanitized tree's 65 (clang 14), all of it spent again by a build
#     from an empty cache. A fresh clone at the same path still hits every unit (measured: 3 of 3,
#     direct, one of them through the tests' precompiled header). At another path neither mode hits
#     a batched unit: CMake's unity files include their sources by absolute path.
compiler_cache=(-DCMAKE_CXX_COMPILER_LAUNCHER=)
if [ "${DIAGNOSE_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
  export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
  sloppiness=${CCACHE_SLOPPINESS:-}   # added to, not replaced: a user's own setting stays
  for s in pch_defines time_macros; do
    case ",$sloppiness," in *",$s,"*) ;; *) sloppiness=${sloppiness:+$sloppiness,}$s ;; esac
  done
  export CCACHE_SLOPPINESS=$sloppiness
  if [ -z "${CCACHE_NODEPEND:-}" ]; then export CCACHE_DEPEND=true; fi   # CCACHE_NODEPEND=1 turns it off
  compiler_cache=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
