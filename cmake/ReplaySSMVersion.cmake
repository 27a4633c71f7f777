# version_info.cpp is regenerated at every build (written only when it changes) so --version shows the real git sha.
set(REPLAYSSM_VERSION_CPP ${CMAKE_BINARY_DIR}/generated/version_info.cpp)
add_custom_target(replayssm_version_stamp
  COMMAND ${CMAKE_COMMAND}
    -DSRC=${CMAKE_SOURCE_DIR} -DOUT=${REPLAYSSM_VERSION_CPP}
    -DVERSION=${PROJECT_VERSION}
    -DCXX_ID=${CMAKE_CXX_COMPILER_ID}-${CMAKE_CXX_COMPILER_VERSION}
    "-DCXX_FLAGS=${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_RELEASE}"
    "-DCUDA_FLAGS=${CMAKE_CUDA_FLAGS} arch=${CMAKE_CUDA_ARCHITECTURES}"
    -DHAVE_CUDA=${REPLAYSSM_HAVE_CUDA}
    -DBUILD_TYPE=${CMAKE_BUILD_TYPE}
    -P ${CMAKE_SOURCE_DIR}/cmake/WriteVersion.cmake
  BYPRODUCTS ${REPLAYSSM_VERSION_CPP}
  COMMENT "Stamping version and git sha")
