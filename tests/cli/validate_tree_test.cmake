# `replayssm validate --tree`: a branching tree adds passing tree-verify rows to the emulated rows (exit 0), and a
# tree over 64 nodes exits 2 with one line naming --tree.
execute_process(COMMAND ${CLI} validate --backend emulated --arch mamba2 --tree 3,2 RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "validate --tree 3,2: exit ${rc}\n${out}\n${err}")
endif()
string(REGEX MATCHALL "emulated +mamba2\\.tree [^\n]*PASS" rows "${out}")
list(LENGTH rows n)
if(n LESS 30)  # one summary row per mode (every policy x format of the validation list)
  message(FATAL_ERROR "validate --tree 3,2: ${n} passing mamba2.tree rows, expected one per mode\n${out}")
endif()
if(out MATCHES "FAIL")
  message(FATAL_ERROR "validate --tree 3,2: a row failed\n${out}")
endif()
execute_process(COMMAND ${CLI} validate --backend emulated --tree binary:6 RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "--tree" OR NOT err MATCHES "at most 64")
  message(FATAL_ERROR "validate --tree binary:6: exit ${rc}, stderr '${err}' (expected 2 and a line naming --tree)")
endif()
