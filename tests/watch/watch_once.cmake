# Writes the stdout of `DIAGNOSE watch OUTPUTS --once` to OUT, for the agreement tests that read one
# shared run (tests/CMakeLists.txt). Leaves no OUT when watch does not exit 0, so that no test reads
# a previous run's lines.
#   cmake -DDIAGNOSE=... -DOUTPUTS=... -DOUT=... -P watch_once.cmake
foreach(var DIAGNOSE OUTPUTS OUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "watch_once.cmake needs -D${var}=")
  endif()
endforeach()
file(REMOVE "${OUT}" "${OUT}.partial")
get_filename_component(out_dir "${OUT}" DIRECTORY)
file(MAKE_DIRECTORY "${out_dir}")
execute_process(COMMAND "${DIAGNOSE}" watch "${OUTPUTS}" --once
                OUTPUT_FILE "${OUT}.partial" ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc STREQUAL "0")
  file(REMOVE "${OUT}.partial")
  message(FATAL_ERROR "`diagnose watch ${OUTPUTS} --once` exited ${rc}:\n${err}")
endif()
file(RENAME "${OUT}.partial" "${OUT}")
