# Write a reproducer's metadata file (build/repro/<id>.json) from its
# --describe, for the host runner (scripts/krepro/meta.py). A POST_BUILD step
# of the native build (krepro_reproducer() in CMakeLists.txt):
#   cmake -DEXE=<binary> -DOUT=<dir>/<id>.json -P cmake/describe.cmake
# The file is data, mode 0644: guest-image/build.sh copies the executables of
# build/repro/ into the guest, and this one must not look like one.
execute_process(COMMAND ${EXE} --describe
  OUTPUT_FILE ${OUT}.tmp
  ERROR_VARIABLE err
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(REMOVE ${OUT}.tmp)
  message(FATAL_ERROR "${EXE} --describe failed (${rc}): ${err}")
endif()
# It must parse, and name the reproducer the file is named after (the host
# keys the metadata by name).
file(READ ${OUT}.tmp json)
get_filename_component(id ${OUT} NAME_WLE)
string(JSON name ERROR_VARIABLE jerr GET "${json}" name)
if(jerr OR NOT name STREQUAL id)
  file(REMOVE ${OUT}.tmp)
  message(FATAL_ERROR "${EXE} --describe: not JSON naming ${id}: ${jerr}${name}")
endif()
file(CHMOD ${OUT}.tmp PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
file(RENAME ${OUT}.tmp ${OUT})
