# campaign_gate: the CI accuracy gate of issue 12. 40 randomized jobs at a fixed seed, scored
# against the diagnose just built; below any goal the test fails and prints the wrong jobs.
file(REMOVE_RECURSE ${WORK})
execute_process(COMMAND ${CAMPAIGN} generate --seed ${SEED} --jobs 40 --out ${WORK} --jobs-parallel 2
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "campaign generate --seed ${SEED} failed: ${rc}")
endif()
execute_process(COMMAND ${CAMPAIGN} score --diagnose ${DIAGNOSE} ${WORK} --json ${WORK}/score.json
                        --min-root-cause 0.97 --min-action 0.97 --min-precision 0.99 --min-recall 0.95
                        --min-healthy-none 0.99
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "campaign at seed ${SEED} is below the issue-12 goals (exit ${rc}); see the table above")
endif()
