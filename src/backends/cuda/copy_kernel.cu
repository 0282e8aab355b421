// The SM copy kernel (cases host_to_device_sm, device_to_host_sm): a grid-stride
// loop of 16-byte loads and stores when both ends are 16-byte aligned, bytes
// otherwise. Compiled to PTX (ptx.cmake) and loaded with cuModuleLoadData.
// Launch: kernelParams = {&dst, &src, &bytes}, all 64-bit.
// After editing, regenerate the committed PTX (used where nvcc is missing):
//   cmake -DNVCC=nvcc -DCU=copy_kernel.cu -DCOMMITTED=copy_kernel.ptx \
//         -DOUT=/tmp/copy_kernel_ptx.cc -DPTX_OUT=copy_kernel.ptx -P embed_ptx.cmake
extern "C" __global__ void ds_copy_kernel(unsigned char* __restrict__ dst,
                                          const unsigned char* __restrict__ src,
                                          unsigned long long bytes) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  const unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  unsigned long long done = 0;
  if ((((unsigned long long)dst | (unsigned long long)src) & 15) == 0) {
    const unsigned long long n = bytes / 16;
    uint4* d = reinterpret_cast<uint4*>(dst);
    const uint4* s = reinterpret_cast<const uint4*>(src);
    for (unsigned long long k = first; k < n; k += stride) d[k] = s[k];
    done = n * 16;
  }
  for (unsigned long long k = done + first; k < bytes; k += stride) dst[k] = src[k];
}
