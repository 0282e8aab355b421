# cmake -DDIR=<sanitizer-reports> -P check_reports.cmake: fails, printing every
# report, when a sanitizer wrote one during the suite (tests/sanitizers/sanitizers.cmake).
file(GLOB reports "${DIR}/*")
if(NOT reports)
  message(STATUS "no sanitizer reports in ${DIR}")
  return()
endif()
foreach(r ${reports})
  file(READ "${r}" text)
  message("==== ${r}\n${text}")
endforeach()
list(LENGTH reports n)
message(FATAL_ERROR "${n} sanitizer report(s) in ${DIR} (above)")
