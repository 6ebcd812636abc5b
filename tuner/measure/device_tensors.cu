#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "moe/error.hpp"
#include "tuner/measure/device_tensors.hpp"

namespace moe::tuner {

namespace {

// Host-to-device copies from pageable memory run at a fraction of the link's speed, and pinning a
// 30 GB weight tensor in place costs seconds of its own: large copies go through two pinned
// 32 MiB buffers instead, the CPU filling one while the DMA engine drains the other.
void copy_to_device(void* dst, const void* src, std::size_t bytes) {
  constexpr std::size_t kChunk = std::size_t{32} << 20;
  if (bytes <= kChunk) {
    if (bytes) cuda_check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
    return;
  }
  struct Staging {
    void* buf[2] = {nullptr, nullptr};
    cudaEvent_t done[2] = {nullptr, nullptr};
    cudaStream_t stream = nullptr;
    ~Staging() {
      if (stream) cudaStreamSynchronize(stream), cudaStreamDestroy(stream);
      for (int i = 0; i < 2; ++i) {
        if (done[i]) cudaEventDestroy(done[i]);
        if (buf[i]) cudaFreeHost(buf[i]);
      }
    }
  } st;
  cuda_check(cudaStreamCreateWithFlags(&st.stream, cudaStreamNonBlocking), "cudaStreamCreate (upload)");
  for (int i = 0; i < 2; ++i) {
    cuda_check(cudaMallocHost(&st.buf[i], kChunk), "cudaMallocHost (upload staging)");
    cuda_check(cudaEventCreateWithFlags(&st.done[i], cudaEventDisableTiming), "cudaEventCreate (upload)");
  }
  for (std::size_t off = 0, i = 0; off < bytes; off += kChunk, i ^= 1) {
    const std::size_t n = std::min(kChunk, bytes - off);
    cuda_check(cudaEventSynchronize(st.done[i]), "cudaEventSynchronize (upload)");  // buffer i drained
    std::memcpy(st.buf[i], static_cast<const char*>(src) + off, n);
    cuda_check(cudaMemcpyAsync(static_cast<char*>(dst) + off, st.buf[i], n, cudaMemcpyHostToDevice, st.stream),
               "cudaMemcpyAsync H2D");
    cuda_check(cudaEventRecord(st.done[i], st.stream), "cudaEventRecord (upload)");
  }
  cuda_check(cudaStreamSynchronize(st.stream), "cudaStreamSynchronize (upload)");
}

}  // namespace

DeviceTensors DeviceTensors::upload(const TensorMap& host) {
  DeviceTensors d;
  for (auto& [k, t] : host) {
    Item it{DeviceBuffer(t.nbytes()), t.dtype(), t.shape()};
    copy_to_device(it.buf.get(), t.raw(), t.nbytes());
    d.items_.emplace(k, std::move(it));
  }
  return d;
}

DeviceTensors DeviceTensors::alloc(const std::vector<TensorSpec>& specs) {
  DeviceTensors d;
  for (auto& s : specs) {
    d.items_.emplace(s.name, Item{DeviceBuffer(static_cast<std::size_t>(numel(s.shape)) * dtype_size(s.dtype)),
                                  s.dtype, s.shape});
  }
  return d;
}

void DeviceTensors::poison() {
  for (auto& [k, it] : items_) {
    if (!it.buf.size()) continue;
    // The host pattern, copied: one code path for both sides. The pattern is the same for every
    // element, so at most 32 MiB of it serves any size (no output-sized host copy on the way).
    const std::size_t es = dtype_size(it.dtype);
    const std::size_t n = it.buf.size() / es;
    const std::size_t chunk = std::min(n, (std::size_t{32} << 20) / es);
    Tensor pattern(it.dtype, {static_cast<std::int64_t>(chunk)});
    poison_host(pattern.ref());
    for (std::size_t done = 0; done < n; done += chunk)
      cuda_check(cudaMemcpy(static_cast<char*>(it.buf.get()) + done * es, pattern.raw(), std::min(chunk, n - done) * es,
                            cudaMemcpyHostToDevice),
                 "cudaMemcpy poison");
  }
}

RefMap DeviceTensors::refs() const {
  RefMap r;
  for (auto& [k, it] : items_) r[k] = TensorRef{it.buf.get(), it.dtype, it.shape};
  return r;
}

TensorMap DeviceTensors::download() const {
  TensorMap m;
  for (auto& [k, it] : items_) {
    Tensor t(it.dtype, it.shape);
    if (t.nbytes()) cuda_check(cudaMemcpy(t.raw(), it.buf.get(), t.nbytes(), cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
    m.emplace(k, std::move(t));
  }
  return m;
}

std::size_t DeviceTensors::bytes() const {
  std::size_t n = 0;
  for (auto& [k, it] : items_) n += it.buf.size();
  return n;
}

void poison_workspace(void* ws, std::size_t bytes, void* stream) {
  if (!ws || bytes == 0) return;
  cuda_check(cudaMemsetAsync(ws, 0xFF, bytes, static_cast<cudaStream_t>(stream)), "cudaMemsetAsync (poisoning the workspace)");
}

}  // namespace moe::tuner
