#include "tuner/measure/graph_timing.hpp"

namespace moe::tuner {

std::string graph_timing_unavailable(Backend b) {
  switch (b) {
    case Backend::cuda: return "";
    case Backend::emu: return "the emu backend validates the cuda kernel sources and times nothing";
    default: return "the cpu backend runs on the host, where CUDA graphs do not exist: only the layer alone is timed";
  }
}

}  // namespace moe::tuner
