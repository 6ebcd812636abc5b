#include "gmm/detail.hpp"

namespace moe::gmm {
BackendImpl cuda_backend() {
  BackendImpl b;
  b.backend = Backend::cuda;
  return b;
}
}  // namespace moe::gmm
