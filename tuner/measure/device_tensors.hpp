#pragma once
// A set of named tensors in device memory, mirroring a host TensorMap.
#include <map>
#include <string>

#include "moe/cuda_device.hpp"
#include "moe/family.hpp"

namespace moe::tuner {

class DeviceTensors {
 public:
  static DeviceTensors upload(const TensorMap& host);
  static DeviceTensors alloc(const std::vector<TensorSpec>& specs);
  void poison();  // same patterns as poison_host
  RefMap refs() const;
  TensorMap download() const;
  std::size_t bytes() const;

 private:
  struct Item {
    DeviceBuffer buf;
    DType dtype;
    Shape shape;
  };
  std::map<std::string, Item> items_;
};

// 0xFF over a workspace on `stream` (cudaStream_t) before a validated call: nothing a call reads
// from its workspace may be what an earlier call left there.
void poison_workspace(void* ws, std::size_t bytes, void* stream);

}  // namespace moe::tuner
