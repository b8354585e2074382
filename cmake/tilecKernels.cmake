# tilecKernels.cmake - tilec_add_kernels(): .tile files compiled into a
# target at build time (tilec --emit=c, docs/aot.md), as a .c file is.
#
#   tilec_add_kernels(myprog
#     FILES kernels/vadd.tile kernels/softmax.tile
#     ARCHS sm_80 sm_90            # cubins for these, PTX of the newest for later GPUs (default sm_80)
#     DEFINES BLOCK=1024           # -D values, for every file
#     NUM_WARPS 4                  # optional
#     PTX_ONLY)                    # optional: no cubins (where there is no ptxas), PTX for the newest arch
#
# For each FILE, NAME.h and NAME.c (NAME: the file's name without .tile)
# are generated under the target's binary folder, the .c added to the
# target's sources and the folder to its include path; the target links
# tilec::tilec_rt, the runtime without the compiler. A file is compiled
# again when it, the options or tilec change. The program includes
# "NAME.h" and calls NAME_load and NAME_KERNEL (docs/aot.md).
include_guard(GLOBAL)

function(tilec_add_kernels target)
  cmake_parse_arguments(TK "PTX_ONLY" "NUM_WARPS" "FILES;ARCHS;DEFINES" ${ARGN})
  if(NOT TK_FILES)
    message(FATAL_ERROR "tilec_add_kernels(${target}): no FILES")
  endif()
  if(TK_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "tilec_add_kernels(${target}): unknown arguments: ${TK_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TK_ARCHS)
    set(TK_ARCHS sm_80)
  endif()
  set(flags)
  foreach(a ${TK_ARCHS})
    list(APPEND flags --arch=${a})
  endforeach()
  foreach(d ${TK_DEFINES})
    list(APPEND flags -D ${d})
  endforeach()
  if(TK_NUM_WARPS)
    list(APPEND flags --num-warps=${TK_NUM_WARPS})
  endif()
  if(TK_PTX_ONLY)
    list(APPEND flags --ptx-only)
  endif()
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/${target}_tilec)
  file(MAKE_DIRECTORY ${dir})
  foreach(f ${TK_FILES})
    get_filename_component(src ${f} ABSOLUTE)
    get_filename_component(name ${f} NAME_WE)
    add_custom_command(OUTPUT ${dir}/${name}.c ${dir}/${name}.h
      COMMAND tilec::tilec_cli ${src} --emit=c ${flags} -o ${dir}/${name}
      DEPENDS ${src} tilec::tilec_cli
      COMMENT "tilec --emit=c ${f}"
      VERBATIM)
    target_sources(${target} PRIVATE ${dir}/${name}.c ${dir}/${name}.h)
  endforeach()
  target_include_directories(${target} PRIVATE ${dir})
  target_link_libraries(${target} PRIVATE tilec::tilec_rt)
endfunction()
