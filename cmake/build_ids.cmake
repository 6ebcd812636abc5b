# Writes OUT: one `{"family", "id"},` line per kernel family, where id hashes the family's
# sources (kernels/<dir>/, path and code) and the CUDA toolchain (TOOLCHAIN). A table
# records the id of the build that tuned it; runtime dispatch ignores a table of another id.
# The layer's id covers every family, since its configs name the stages' configs.
# Comments and layout are left out of the hash: editing them compiles to the same kernels, and
# must not turn every tuned table stale.
set(families "router:router" "dispatch:dispatch" "gmm:gmm" "combine:combine" "moe-layer:layer")
set(all "")
set(lines "")
foreach(pair ${families})
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 name)
  list(GET pair 1 dir)
  file(GLOB_RECURSE files RELATIVE ${SRC} ${SRC}/kernels/${dir}/*)
  list(SORT files)
  set(text "${TOOLCHAIN}\n")
  foreach(f ${files})
    file(READ ${SRC}/${f} code)
    # Line comments (a "//" inside a string literal cuts the rest of that line too, which only
    # makes the id blind to that text), block comments, then runs of blanks.
    string(REGEX REPLACE "//[^\n]*" "" code "${code}")
    string(REGEX REPLACE "/\\*([^*]|\\*+[^*/])*\\*+/" " " code "${code}")
    string(REGEX REPLACE "[ \t\r\n]+" " " code "${code}")
    string(STRIP "${code}" code)
    string(SHA256 h "${code}")
    string(APPEND text "${f} ${h}\n")
  endforeach()
  if(name STREQUAL "moe-layer")
    string(APPEND text "${all}")
  else()
    string(APPEND all "${text}")
  endif()
  string(SHA256 id "${text}")
  string(SUBSTRING "${id}" 0 16 id)
  string(APPEND lines "{\"${name}\", \"${id}\"},\n")
endforeach()
# Rewritten only when it changes, so an unrelated edit recompiles nothing.
set(old "")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL lines)
  file(WRITE ${OUT} "${lines}")
endif()
