// The SM copy kernel (cases host_to_device_sm, device_to_host_sm), the SM gather
// kernel (host_to_device_sm_gather, device_to_host_sm_gather) and the start
// gate's spin kernel (below). Compiled to PTX (ptx.cmake) and loaded with
// cuModuleLoadData.
// Launch: kernelParams = {&dst, &src, &bytes, &head, &width}, all 64-bit, as
// planned on the host (copy_kernel_plan.h): bytes [0, head) one by one, until
// dst + head and src + head are both `width`-aligned; then whole `width`-byte
// units (16, 8, 4, 2 or 1 bytes per load and store); then the tail one by one.
// Every part is a grid-stride loop, so any grid size covers every byte.
// After editing, regenerate the committed PTX (used where nvcc is missing):
//   cmake -DNVCC=nvcc -DCU=copy_kernel.cu -DCOMMITTED=copy_kernel.ptx \
//         -DOUT=/tmp/copy_kernel_ptx.cc -DPTX_OUT=copy_kernel.ptx -P embed_ptx.cmake
template <typename Unit>
__device__ __forceinline__ void copy_units(unsigned char* __restrict__ dst,
                                           const unsigned char* __restrict__ src,
                                           unsigned long long n, unsigned long long first,
                                           unsigned long long stride) {
  Unit* d = reinterpret_cast<Unit*>(dst);
  const Unit* s = reinterpret_cast<const Unit*>(src);
  for (unsigned long long k = first; k < n; k += stride) d[k] = s[k];
}

// One copy's three parts (the plan above), the calling thread taking offsets
// first, first + stride, ... of each.
__device__ __forceinline__ void copy_planned(unsigned char* __restrict__ dst, const unsigned char* __restrict__ src,
                                             unsigned long long bytes, unsigned long long head,
                                             unsigned long long width, unsigned long long first,
                                             unsigned long long stride) {
  if (head > bytes) head = bytes;
  for (unsigned long long k = first; k < head; k += stride) dst[k] = src[k];
  const unsigned long long n = (bytes - head) / width;
  unsigned char* d = dst + head;
  const unsigned char* s = src + head;
  switch (width) {
    case 16: copy_units<uint4>(d, s, n, first, stride); break;
    case 8: copy_units<unsigned long long>(d, s, n, first, stride); break;
    case 4: copy_units<unsigned int>(d, s, n, first, stride); break;
    case 2: copy_units<unsigned short>(d, s, n, first, stride); break;
    default: copy_units<unsigned char>(d, s, n, first, stride); break;
  }
  for (unsigned long long k = head + n * width + first; k < bytes; k += stride) dst[k] = src[k];
}

extern "C" __global__ void ds_copy_kernel(unsigned char* __restrict__ dst,
                                          const unsigned char* __restrict__ src,
                                          unsigned long long bytes, unsigned long long head,
                                          unsigned long long width) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  const unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  copy_planned(dst, src, bytes, head, width, first, stride);
}

// The gather kernel: every copy of an iteration in one launch, from a descriptor
// table in device memory (uploaded once at setup), each descriptor five 64-bit
// words {dst, src, bytes, head, width} planned as ds_copy_kernel's parameters.
// Launch: kernelParams = {&table (64-bit device address), &count (64-bit)} on a
// grid of X x Y blocks: blockIdx.x grid-strides over the descriptors, and the Y
// blocks of one column share a descriptor's bytes (their threads grid-striding
// them), so any grid covers every byte of every descriptor.
struct GatherDesc {
  unsigned long long dst, src, bytes, head, width;
};

extern "C" __global__ void ds_gather_kernel(const GatherDesc* __restrict__ table, unsigned long long count) {
  const unsigned long long stride = (unsigned long long)gridDim.y * blockDim.x;
  const unsigned long long first = (unsigned long long)blockIdx.y * blockDim.x + threadIdx.x;
  for (unsigned long long i = blockIdx.x; i < count; i += gridDim.x) {
    const GatherDesc g = table[i];
    copy_planned(reinterpret_cast<unsigned char*>(g.dst), reinterpret_cast<const unsigned char*>(g.src), g.bytes,
                 g.head, g.width, first, stride);
  }
}

// The stream start gate's hold where the driver has no cuStreamWaitValue32
// (before CUDA 11.7): launched 1x1x1 at the head of a stream, one thread waits
// until the host has stored `value` (or a later round) in the mapped word, so
// nothing queued behind it starts before the release.
// Launch: kernelParams = {&flag (64-bit device address of the mapped word), &value (32-bit)}.
extern "C" __global__ void ds_gate_kernel(const volatile unsigned int* flag, unsigned int value) {
  while (static_cast<int>(*flag - value) < 0) {
  }
}
