# install_layout: `cmake --install` puts the CLI in <prefix>/bin, its man page and bash/zsh
# completions where man and the shells look, and rules/ + playbooks/ (without the playbook tests)
# in <prefix>/share/diagnose, and the installed binary reads its data there,
# not from the source tree it was built from. Run as
#   cmake -DBUILD=<build> -DPREFIX=<scratch prefix> -P install_check.cmake
cmake_minimum_required(VERSION 3.16)
file(REMOVE_RECURSE ${PREFIX})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD} --prefix ${PREFIX} RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc})")
endif()
foreach(f bin/diagnose share/diagnose/rules/common/windows.yaml share/diagnose/rules/sweep/decisions.yaml
          share/diagnose/playbooks/rdma-phase-correlation.yaml share/diagnose/playbooks/README.md
          share/man/man1/diagnose.1 share/bash-completion/completions/diagnose
          share/zsh/vendor-completions/_diagnose)
  if(NOT EXISTS ${PREFIX}/${f})
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()
if(EXISTS ${PREFIX}/share/diagnose/playbooks/tests)
  message(FATAL_ERROR "playbook tests were installed")
endif()
# A playbook removed from the installed copy only must be gone from what the installed binary lints.
file(REMOVE ${PREFIX}/share/diagnose/playbooks/checkpoint-interference.yaml)
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=DIAGNOSE_DATA_DIR ${PREFIX}/bin/diagnose lint
                WORKING_DIRECTORY ${PREFIX} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "installed diagnose lint failed (${rc}): ${out}${err}")
endif()
if(NOT out MATCHES "rdma-phase-correlation.yaml: Ok")
  message(FATAL_ERROR "installed diagnose lint did not lint the installed playbooks:\n${out}")
endif()
if(out MATCHES "checkpoint-interference.yaml")
  message(FATAL_ERROR "the installed binary read the source tree's playbooks, not its own:\n${out}")
endif()
file(REMOVE_RECURSE ${PREFIX})
