# Warnings-as-errors for our own targets, and a guard against fast-math: it adds the very error this tool measures.
function(replayssm_strict target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion -Werror>
    $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Wall,-Wextra,-Werror>)
  if(REPLAYSSM_SANITIZE)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all>)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()

foreach(flagvar CMAKE_CXX_FLAGS CMAKE_CUDA_FLAGS CMAKE_CXX_FLAGS_RELEASE CMAKE_CUDA_FLAGS_RELEASE)
  if(${flagvar} MATCHES "fast-math|fast_math|-Ofast")
    message(FATAL_ERROR "${flagvar} asks for fast-math; replayssm measures rounding error and refuses it")
  endif()
endforeach()
# Keep FP contraction explicit: the host compiler must not fuse a*b+c behind our back (the GPU code uses fmaf by name).
string(APPEND CMAKE_CXX_FLAGS " -ffp-contract=off")
if(REPLAYSSM_SANITIZE)
  string(APPEND CMAKE_EXE_LINKER_FLAGS " -fsanitize=address,undefined")
endif()
