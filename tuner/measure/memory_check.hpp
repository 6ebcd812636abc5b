#pragma once
// A point refused before it starts when it cannot fit: on the host (inputs, outputs and the
// reference, less the inputs the user gave) and on the device (one copy of the inputs and
// outputs, plus what the timer needs), with the numbers and what to do.
#include <string>

#include "moe/family.hpp"

namespace moe::tuner {

// Throws an Error when the family's footprint does not fit the host's limit (moe/memory.hpp).
void check_host_fits(const FamilyDesc& f, const Params& problem, const TensorMap& given);

// A host backend's workspace (the layer's intermediates on the cpu backend), before it is
// allocated, against what the host has left once the inputs exist.
void check_host_workspace(const FamilyDesc& f, const Params& problem, double bytes);

// Free device memory (cudaMemGetInfo) and the refusal; `extra` is the timer's own buffers.
void check_device_fits(const FamilyDesc& f, const Params& problem, const DeviceInfo& dev, double extra_bytes,
                       const std::string& extra_name);
// The refusal itself, given the free bytes: the cpu tests use it without a device.
void check_device_fits(const FamilyDesc& f, const Params& problem, const DeviceInfo& dev, double extra_bytes,
                       const std::string& extra_name, double free_bytes);

}  // namespace moe::tuner
