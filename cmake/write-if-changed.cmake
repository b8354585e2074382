# write_if_changed(FILE TEXT): writes TEXT to FILE unless it already holds
# exactly that, so a regenerated file that did not change keeps its time
# stamp and what depends on it is not rebuilt. Included by the -P scripts.
function(write_if_changed file text)
  set(_old "")
  if(EXISTS ${file})
    file(READ ${file} _old)
  endif()
  if(NOT "${_old}" STREQUAL "${text}")
    file(WRITE ${file} "${text}")
  endif()
endfunction()
