// Probe (issue 15, not part of the library): how long the driver calls of
// one growth step take (cuMemCreate, cuMemMap, cuMemSetAccess, and the
// cudaFree(nullptr) + cuMemGetAllocationGranularity that
// CudaVirtualMemory::granularity makes per answer), on an idle GPU and while
// a kernel keeps every multiprocessor busy, as a growing launch does.
//
// Three kinds of busy kernel: one whose threads all poll a word of host
// memory (the growth mailbox's workers before M5), one where a single thread
// polls host memory and the others a word of device memory (since M5), and
// one whose threads write device memory in a loop (requests that search the
// pool: memory traffic).
//
//   nvcc -std=c++17 -O2 -arch=sm_90 map_timing_probe.cu -lcuda -o map_timing_probe
//   ./map_timing_probe
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#define CHECK_DRV(x)                                                              \
  do {                                                                            \
    CUresult r_ = (x);                                                            \
    if (r_ != CUDA_SUCCESS) {                                                     \
      const char* s_ = nullptr;                                                   \
      cuGetErrorString(r_, &s_);                                                  \
      std::fprintf(stderr, "%s failed: %s (line %d)\n", #x, s_ ? s_ : "?", __LINE__); \
      std::exit(1);                                                               \
    }                                                                             \
  } while (0)
#define CHECK_RT(x)                                                                          \
  do {                                                                                       \
    cudaError_t e_ = (x);                                                                    \
    if (e_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "%s failed: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__); \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

using Clock = std::chrono::steady_clock;
static double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

__global__ void poll_kernel(volatile int* stop, volatile int* started) {
  if (blockIdx.x == 0 && threadIdx.x == 0) *started = 1;
  while (*stop == 0) {
  }
}

// One thread polls the host's word; every other thread spins on a word of
// device memory that it sets when told to stop (the growth mailbox since
// M5: one lock holder loads host memory, the waiters device memory).
__global__ void poll_one_kernel(volatile int* stop, volatile int* started, volatile int* device_stop) {
  const bool poller = blockIdx.x == 0 && threadIdx.x == 0;
  if (poller) {
    *started = 1;
    while (*stop == 0) {
    }
    *device_stop = 1;
    __threadfence();
  } else {
    while (*device_stop == 0) {
    }
  }
}

__global__ void write_kernel(unsigned* scratch, std::size_t words, volatile int* stop, volatile int* started) {
  if (blockIdx.x == 0 && threadIdx.x == 0) *started = 1;
  const std::size_t tid = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  // The stop word is host memory: read once per pass over the scratch.
  for (unsigned round = 0; *stop == 0; ++round)
    for (std::size_t i = tid; i < words; i += stride) scratch[i] += round;
}

struct Step {
  double granularity, create, map, access, total;
};

static CUmemAllocationProp properties(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

// One growth step as CudaVirtualMemory::map makes it, each call timed.
static Step map_step(CUdeviceptr at, std::size_t bytes, int device, std::vector<CUmemGenericAllocationHandle>& handles) {
  Step s{};
  const auto t0 = Clock::now();
  auto t = t0;
  CHECK_RT(cudaFree(nullptr));
  CUmemAllocationProp prop = properties(device);
  std::size_t g = 0;
  CHECK_DRV(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  s.granularity = ms_since(t);
  t = Clock::now();
  CUmemGenericAllocationHandle h{};
  CHECK_DRV(cuMemCreate(&h, bytes, &prop, 0));
  s.create = ms_since(t);
  t = Clock::now();
  CHECK_DRV(cuMemMap(at, bytes, 0, h, 0));
  s.map = ms_since(t);
  t = Clock::now();
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CHECK_DRV(cuMemSetAccess(at, bytes, &access, 1));
  s.access = ms_since(t);
  s.total = ms_since(t0);
  handles.push_back(h);
  return s;
}

int main() {
  const int device = 0;
  CHECK_RT(cudaSetDevice(device));
  CHECK_RT(cudaFree(nullptr));
  cudaDeviceProp dp{};
  CHECK_RT(cudaGetDeviceProperties(&dp, device));
  int driver = 0;
  CHECK_RT(cudaDriverGetVersion(&driver));
  std::printf("# %s, %d SMs, driver API %d\n", dp.name, dp.multiProcessorCount, driver);

  int* host_words = nullptr;  // [0] stop, [1] started
  CHECK_RT(cudaHostAlloc(&host_words, 2 * sizeof(int), cudaHostAllocMapped));
  int* dev_words = nullptr;
  CHECK_RT(cudaHostGetDevicePointer(&dev_words, host_words, 0));
  const std::size_t scratch_words = std::size_t{256} << 20;  // 1 GiB of device memory to write
  unsigned* scratch = nullptr;
  CHECK_RT(cudaMalloc(&scratch, scratch_words * sizeof(unsigned)));
  CHECK_RT(cudaMemset(scratch, 0, scratch_words * sizeof(unsigned)));

  const std::size_t reserve = std::size_t{64} << 30;
  CUdeviceptr base = 0;
  CUmemAllocationProp prop = properties(device);
  std::size_t g = 0;
  CHECK_DRV(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CHECK_DRV(cuMemAddressReserve(&base, reserve, g, 0, 0));

  const std::size_t sizes[] = {std::size_t{2} << 20, std::size_t{64} << 20, std::size_t{544} << 20,
                               std::size_t{2048} << 20};
  int* device_stop = nullptr;
  CHECK_RT(cudaMalloc(&device_stop, sizeof(int)));
  const char* modes[] = {"idle", "poll", "poll_one", "write"};
  std::printf("mode\tstep_MiB\trep\tgranularity_ms\tcreate_ms\tmap_ms\tset_access_ms\ttotal_ms\n");
  std::size_t mapped = 0;
  std::vector<CUmemGenericAllocationHandle> handles;
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  for (int rep = 0; rep < 3; ++rep) {
    for (const char* mode : modes) {
      const bool busy = mode[0] != 'i';
      if (busy) {
        host_words[0] = 0;
        host_words[1] = 0;
        CHECK_RT(cudaMemset(device_stop, 0, sizeof(int)));
        if (std::string(mode) == "poll")
          poll_kernel<<<dp.multiProcessorCount * 8, 256>>>(dev_words, dev_words + 1);
        else if (std::string(mode) == "poll_one")
          poll_one_kernel<<<dp.multiProcessorCount * 8, 256>>>(dev_words, dev_words + 1, device_stop);
        else
          write_kernel<<<dp.multiProcessorCount * 8, 256>>>(scratch, scratch_words, dev_words, dev_words + 1);
        CHECK_RT(cudaGetLastError());
        const auto wait = Clock::now();
        while (reinterpret_cast<volatile int*>(host_words)[1] == 0 && ms_since(wait) < 2000.0) {
        }
        if (reinterpret_cast<volatile int*>(host_words)[1] == 0) {
          std::fprintf(stderr, "kernel did not start\n");
          return 1;
        }
      }
      for (std::size_t bytes : sizes) {
        if (mapped + bytes > reserve) break;
        const Step s = map_step(base + mapped, bytes, device, handles);
        ranges.push_back({mapped, bytes});
        mapped += bytes;
        std::printf("%s\t%zu\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\n", mode, bytes >> 20, rep, s.granularity, s.create,
                    s.map, s.access, s.total);
      }
      if (busy) {
        reinterpret_cast<volatile int*>(host_words)[0] = 1;
        CHECK_RT(cudaDeviceSynchronize());
      }
      // Give the memory back so that every repetition maps afresh.
      for (std::size_t i = 0; i < handles.size(); ++i) {
        CHECK_DRV(cuMemUnmap(base + ranges[i].first, ranges[i].second));
        CHECK_DRV(cuMemRelease(handles[i]));
      }
      handles.clear();
      ranges.clear();
      mapped = 0;
    }
  }
  CHECK_DRV(cuMemAddressFree(base, reserve));
  return 0;
}
