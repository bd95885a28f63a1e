# Turn kernel-reports.tsv into a C array of its regexes (the second column;
# the guest needs neither the titles nor the host's culprit stems and rules).
file(STRINGS ${IN} lines)
set(body "")
foreach(line IN LISTS lines)
  # Kind "-": not a report; the host alone skips such lines.
  if(line MATCHES "^#" OR line MATCHES "^-\t" OR line STREQUAL "")
    continue()
  endif()
  if(NOT line MATCHES "^[^\t]+\t([^\t]+)\t[^\t]+(\t[^\t]+)?(\t[^\t]+)?$")
    message(FATAL_ERROR "${IN}: not kind<TAB>regex<TAB>title[<TAB>culprit stem[<TAB>culprit rule]]: ${line}")
  endif()
  set(re "${CMAKE_MATCH_1}")
  string(REPLACE "\\" "\\\\" re "${re}")
  string(REPLACE "\"" "\\\"" re "${re}")
  string(APPEND body "\t\"${re}\",\n")
endforeach()
file(WRITE ${OUT}.tmp "/* Generated from repro/lib/kernel-reports.tsv; do not edit. */\nstatic const char *const kernel_report_patterns[] = {\n${body}};\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
