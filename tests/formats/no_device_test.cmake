# REPLAYSSM_REQUIRE_GPU (tests/formats/no_device.h), checked on any machine through no_device_probe, which takes
# the path a GPU test binary takes without a usable device: unset or "0" -> exit 77 (CTest SKIP) with "SKIP: <why>";
# "1" (or any other non-empty value) -> exit 1 (a failure) with "FAIL: ... <why>".
# Usage: cmake -DPROBE=<no_device_probe> -P no_device_test.cmake
set(failures "")
function(expect setting want_rc want_word)
  if(setting STREQUAL "<unset>")
    set(env_args --unset=REPLAYSSM_REQUIRE_GPU)
  else()
    set(env_args REPLAYSSM_REQUIRE_GPU=${setting})
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${env_args} ${PROBE}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(STRIP "${out}" out)
  if(NOT rc EQUAL want_rc OR NOT out MATCHES "^${want_word}: .*probe reason")
    set(failures "${failures}\n  REPLAYSSM_REQUIRE_GPU=${setting}: expected exit ${want_rc} and '${want_word}: ... probe reason', got exit ${rc}: '${out}' ${err}" PARENT_SCOPE)
  else()
    message(STATUS "REPLAYSSM_REQUIRE_GPU=${setting}: exit ${rc}: ${out}")
  endif()
endfunction()
expect("<unset>" 77 SKIP)
expect("0" 77 SKIP)
expect("" 77 SKIP)
expect("1" 1 FAIL)
expect("yes" 1 FAIL)
if(failures)
  message(FATAL_ERROR "no-device exit path:${failures}")
endif()
