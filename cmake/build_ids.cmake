# Writes OUT: one `{"family", "id"},` line per kernel family. A table records the id of the
# build that tuned it; runtime dispatch ignores a table of another id. The id hashes what
# decides a family's speed:
#  - its compiled device code: the SASS of its CUDA objects (OBJECTS, the built kernels/<dir>/*.cu.o,
#    read back with CUOBJDUMP and NVDISASM), so a source edit that compiles to the same code keeps every table,
#    while a change of compiler, flags or shared device headers (kernels/common/*.cuh) that
#    changes the code retires them;
#  - its host sources (kernels/<dir>/*.cpp, *.hpp, *.cu and the *launch*.cuh launchers): the
#    config space, launch shapes and the cpu backend. Comments and layout are left out.
#  - the CUDA toolchain (TOOLCHAIN).
# Without objects or cuobjdump (a configure step, a tree without CUDA objects), the device
# headers (the other *.cuh) are hashed as text instead.
# The layer's id covers every family, since its configs name the stages' configs.
# OBJECTS is `|`-separated. The SASS of an object is cached by the object's own hash in
# OUT.sass-cache, so an incremental build reads back only the objects that changed.
set(families "router:router" "dispatch:dispatch" "gmm:gmm" "combine:combine" "moe-layer:layer")
string(REPLACE "|" ";" objects "${OBJECTS}")
set(use_sass FALSE)
if(objects AND CUOBJDUMP AND EXISTS "${CUOBJDUMP}")
  set(use_sass TRUE)
endif()

# Source text with comments and runs of blanks left out.
function(code_hash file out)
  file(READ ${file} code)
  # Line comments (a "//" inside a string literal cuts the rest of that line too, which only
  # makes the id blind to that text), block comments, then runs of blanks.
  string(REGEX REPLACE "//[^\n]*" "" code "${code}")
  string(REGEX REPLACE "/\\*([^*]|\\*+[^*/])*\\*+/" " " code "${code}")
  string(REGEX REPLACE "[ \t\r\n]+" " " code "${code}")
  string(STRIP "${code}" code)
  string(SHA256 h "${code}")
  set(${out} ${h} PARENT_SCOPE)
endfunction()

set(cache_file "${OUT}.sass-cache")
set(cache "")
if(use_sass AND EXISTS ${cache_file})
  file(READ ${cache_file} cache)
endif()
set(new_cache "")

# The SASS of one object, less what names the source file rather than the code: cuobjdump's
# `identifier` lines and the file's tag in anonymous-namespace names.
function(sass_hash obj out)
  file(SHA256 ${obj} obj_hash)
  string(REGEX MATCH "${obj_hash} ([0-9a-f]+)" hit "${cache}")
  if(hit)
    set(h ${CMAKE_MATCH_1})
  else()
    # cuobjdump -sass runs nvdisasm, which NVIDIA's wheel does not put on PATH.
    get_filename_component(nvdisasm_dir "${NVDISASM}" DIRECTORY)
    execute_process(COMMAND ${CMAKE_COMMAND} -E env "PATH=${nvdisasm_dir}:$ENV{PATH}" ${CUOBJDUMP} -sass ${obj}
                    OUTPUT_VARIABLE sass RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "build ids: cuobjdump -sass ${obj} failed (${rc}): ${err}")
    endif()
    string(REGEX REPLACE "identifier = [^\n]*" "" sass "${sass}")
    set(hex8 "[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]")
    string(REGEX REPLACE "_GLOBAL__N__${hex8}_[0-9]+_[A-Za-z0-9_]*_cu_${hex8}" "_GLOBAL__N_" sass "${sass}")
    string(SHA256 h "${sass}")
  endif()
  set(new_cache "${new_cache}${obj_hash} ${h}\n" PARENT_SCOPE)
  set(${out} ${h} PARENT_SCOPE)
endfunction()

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
    if(use_sass AND f MATCHES "\\.cuh$" AND NOT f MATCHES "launch[^/]*\\.cuh$")
      continue()  # device code: its SASS below speaks for it
    endif()
    code_hash(${SRC}/${f} h)
    string(APPEND text "${f} ${h}\n")
  endforeach()
  if(use_sass)
    set(mine "")
    foreach(obj ${objects})
      if(obj MATCHES "/kernels/${dir}/.+\\.cu\\.o(bj)?$")
        list(APPEND mine ${obj})
      endif()
    endforeach()
    list(SORT mine)
    foreach(obj ${mine})
      sass_hash(${obj} h)
      string(REGEX MATCH "kernels/${dir}/.+$" rel "${obj}")
      string(APPEND text "${rel} sass ${h}\n")
    endforeach()
  endif()
  if(name STREQUAL "moe-layer")
    string(APPEND text "${all}")
  else()
    string(APPEND all "${text}")
  endif()
  string(SHA256 id "${text}")
  string(SUBSTRING "${id}" 0 16 id)
  string(APPEND lines "{\"${name}\", \"${id}\"},\n")
endforeach()
if(use_sass)
  file(WRITE ${cache_file} "${new_cache}")
endif()
# Rewritten only when it changes, so a rebuild that produces the same code recompiles nothing.
set(old "")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL lines)
  file(WRITE ${OUT} "${lines}")
endif()
