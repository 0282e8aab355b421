# cmake -DNVCC=<nvcc> -DSRC=<repo root> -DWORK=<scratch dir> -P check_committed_ptx.cmake
# The committed copy_kernel.ptx is what copy_kernel.cu compiles to. The cuda double
# copies in its own C++, so the kernel's body never runs in the tests: an edit of
# copy_kernel.cu without regenerating the PTX (the command is in copy_kernel.cu)
# would go unseen where nvcc is missing, which embeds the committed file. Here
# embed_ptx.cmake runs with this machine's nvcc and must find the same code (its
# comparison: comments, blank lines and the ISA stamp aside).
set(dir ${SRC}/src/backends/cuda)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(
  COMMAND ${CMAKE_COMMAND} -DNVCC=${NVCC} -DCU=${dir}/copy_kernel.cu
          -DCOMMITTED=${dir}/copy_kernel.ptx -DOUT=${WORK}/copy_kernel_ptx.cc -DPTX_OUT=${WORK}/nvcc.ptx
          -P ${dir}/embed_ptx.cmake
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "embed_ptx.cmake with ${NVCC} failed: ${out}${err}")
endif()
file(READ ${WORK}/copy_kernel_ptx.cc cc)
string(REGEX MATCH "kCopyKernelPtxFrom\\[\\] = \"([^\"]*)\"" from "${cc}")
set(from "${CMAKE_MATCH_1}")
if(NOT from MATCHES "gives the same code")
  message(FATAL_ERROR
    "src/backends/cuda/copy_kernel.ptx is not what copy_kernel.cu compiles to with ${NVCC} "
    "(embed_ptx.cmake: ${from}); regenerate it with the command in copy_kernel.cu and commit both "
    "(nvcc's PTX is in ${WORK}/nvcc.ptx)")
endif()
message(STATUS "copy_kernel.ptx: ${from}")
