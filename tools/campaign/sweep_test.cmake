# campaign_sweeps: generate a few sweeps with known truth, score `diagnose sweep` on them. Seed 1 plans
# a sweep with no real winner, one with a winner and a repeat on another nodelist, and a null one.
file(REMOVE_RECURSE ${WORK})
execute_process(COMMAND ${CAMPAIGN} sweep-generate --seed 1 --tuning 3 --model 1 --out ${WORK}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "campaign sweep-generate failed (${rc})")
endif()
execute_process(COMMAND ${CAMPAIGN} sweep-score --diagnose ${DIAGNOSE} ${WORK} --json ${WORK}/score.json
                        --min-winner 1 --max-false-winner 0 --min-rules 1
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "campaign sweep-score missed a threshold (${rc}); see ${WORK}/score.json")
endif()
file(REMOVE_RECURSE ${WORK})
