# The man page and shell completions, written by the built binary from its own parser definition.
# Run as  cmake -DDIAGNOSE=<binary> -DOUT=<dir> -P generate_docs.cmake
cmake_minimum_required(VERSION 3.16)
file(MAKE_DIRECTORY ${OUT}/completions)
foreach(pair "man|diagnose.1" "completion;bash|completions/diagnose" "completion;zsh|completions/_diagnose")
  string(REPLACE "|" ";" pair "${pair}")
  list(POP_BACK pair file)
  # Written beside the target and renamed: an interrupted run never leaves a half page installed.
  execute_process(COMMAND ${DIAGNOSE} ${pair} OUTPUT_FILE ${OUT}/${file}.tmp RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "diagnose ${pair} failed (${rc}): ${err}")
  endif()
  file(RENAME ${OUT}/${file}.tmp ${OUT}/${file})
endforeach()
