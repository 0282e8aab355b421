# The SM copy kernel's PTX, embedded into ds_core as a string. Built from
# copy_kernel.cu with nvcc when the build machine has one; the committed
# copy_kernel.ptx otherwise (or when nvcc fails), so no CUDA toolkit is needed.
# Sets DS_COPY_KERNEL_SOURCES for the ds_core source list.
set(_ds_cuda_dir ${CMAKE_CURRENT_LIST_DIR})
find_program(DS_NVCC nvcc HINTS /usr/local/cuda/bin)
set(_ds_ptx_cc ${CMAKE_CURRENT_BINARY_DIR}/generated/copy_kernel_ptx.cc)
add_custom_command(
  OUTPUT ${_ds_ptx_cc}
  COMMAND ${CMAKE_COMMAND} -DNVCC=${DS_NVCC} -DCU=${_ds_cuda_dir}/copy_kernel.cu
          -DCOMMITTED=${_ds_cuda_dir}/copy_kernel.ptx -DOUT=${_ds_ptx_cc}
          -P ${_ds_cuda_dir}/embed_ptx.cmake
  DEPENDS ${_ds_cuda_dir}/copy_kernel.cu ${_ds_cuda_dir}/copy_kernel.ptx
          ${_ds_cuda_dir}/embed_ptx.cmake
  COMMENT "Embedding the SM copy kernel's PTX"
  VERBATIM)
set(DS_COPY_KERNEL_SOURCES ${_ds_ptx_cc})
