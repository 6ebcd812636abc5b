#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "moe/error.hpp"
#include "tuner/device_tensors.hpp"

namespace moe::tuner {

DeviceTensors DeviceTensors::upload(const TensorMap& host) {
  DeviceTensors d;
  for (auto& [k, t] : host) {
    Item it{DeviceBuffer(t.nbytes()), t.dtype(), t.shape()};
    if (t.nbytes()) cuda_check(cudaMemcpy(it.buf.get(), t.raw(), t.nbytes(), cudaMemcpyHostToDevice), "cudaMemcpy H2D");
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

}  // namespace moe::tuner
