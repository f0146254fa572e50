# campaign_gate: the CI accuracy gate of issue 12. 40 randomized jobs at a fixed seed, scored
# against the diagnose just built; below any goal the test fails and prints the wrong jobs.
# Run as several ctest tests (tools/campaign/CMakeLists.txt) so that no one process nears its time
# limit and two run at once: MODE plan (scenarios + truth), MODE generate with SHARD K/N (a share
# of the jobs), MODE score (every job, once all shares exist).
if(MODE STREQUAL "plan")
  file(REMOVE_RECURSE ${WORK})
  execute_process(COMMAND ${CAMPAIGN} generate --seed ${SEED} --jobs ${JOBS} --out ${WORK} --plan-only
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "campaign generate --seed ${SEED} --plan-only failed: ${rc}")
  endif()
elseif(MODE STREQUAL "generate")
  execute_process(COMMAND ${CAMPAIGN} generate --seed ${SEED} --jobs ${JOBS} --out ${WORK} --shard ${SHARD}
                          --jobs-parallel 1
                  RESULT_VARIABLE rc OUTPUT_QUIET)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "campaign generate --seed ${SEED} --shard ${SHARD} failed: ${rc}")
  endif()
elseif(MODE STREQUAL "score")
  execute_process(COMMAND ${CAMPAIGN} score --diagnose ${DIAGNOSE} ${WORK} --json ${WORK}/score.json
                          --min-root-cause 0.97 --min-action 0.97 --min-precision 0.99 --min-recall 0.95
                          --min-healthy-none 0.99
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "campaign at seed ${SEED} is below the issue-12 goals (exit ${rc}); see the table above")
  endif()
else()
  message(FATAL_ERROR "gate_test.cmake: MODE must be plan, generate or score, not '${MODE}'")
endif()
