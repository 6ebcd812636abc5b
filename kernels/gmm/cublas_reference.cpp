#include "gmm/cublas_reference.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <vector>

#include "common/validate.hpp"
#include "gmm/spec.hpp"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"

namespace moe::gmm {

namespace {

void cublas_check(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string("gmm cuBLAS check: ") + what + " failed with status " + std::to_string(static_cast<int>(st)));
}

struct Handle {
  cublasHandle_t h = nullptr;
  Handle() { cublas_check(cublasCreate(&h), "cublasCreate"); }
  ~Handle() {
    if (h) cublasDestroy(h);
  }
};

}  // namespace

Tensor cublas_output(const Params& problem, const RefMap& din, const TensorMap& hin, bool round_gate_up) {
  const GmmSpec s = GmmSpec::parse(problem);
  const TensorRef& act = need(din, s.act_name());
  const TensorRef& w = need(din, s.weight_name());
  const auto* off = hin.at("offsets").data<std::int32_t>();
  const std::int64_t R = act.shape.at(0), K = s.k_dim(), NW = s.n_w(), NO = s.n_out(), I = s.intermediate;
  Tensor out(s.dtype, {R, NO});
  if (R == 0) return out;

  // fp32 results of the plain GEMM [R, NW], expert by expert.
  DeviceBuffer c(static_cast<std::size_t>(R * NW) * sizeof(float));
  cuda_check(cudaMemset(c.get(), 0, c.size()), "cudaMemset");
  Handle h;
  const cudaDataType_t dt = s.dtype == DType::bf16 ? CUDA_R_16BF : CUDA_R_16F;
  const float one = 1.0f, zero = 0.0f;
  for (std::int64_t e = 0; e < s.e_local(); ++e) {
    const std::int64_t b = off[e], m = off[e + 1] - off[e];
    if (m <= 0) continue;
    // Row-major C[m,NW] = A[m,K] * W_e[NW,K]^T is column-major C^T = W_e^T(op T) * A^T.
    const auto* we = static_cast<const std::uint16_t*>(w.data) + e * NW * K;
    const auto* ae = static_cast<const std::uint16_t*>(act.data) + b * K;
    auto* ce = static_cast<float*>(c.get()) + b * NW;
    cublas_check(cublasGemmEx(h.h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(NW), static_cast<int>(m),
                              static_cast<int>(K), &one, we, dt, static_cast<int>(K), ae, dt, static_cast<int>(K),
                              &zero, ce, CUDA_R_32F, static_cast<int>(NW), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx");
  }
  std::vector<float> host(static_cast<std::size_t>(R * NW));
  cuda_check(cudaMemcpy(host.data(), c.get(), c.size(), cudaMemcpyDeviceToHost), "cudaMemcpy D2H (cuBLAS check)");

  const float* rw = s.routed_weight ? hin.at("row_weight").data<float>() : nullptr;
  for (std::int64_t r = 0; r < R; ++r)
    for (std::int64_t j = 0; j < NO; ++j) {
      float v = host[r * NW + j];
      if (!s.down) {
        float u = host[r * NW + I + j];
        if (round_gate_up) v = round_to(s.dtype, v), u = round_to(s.dtype, u);
        v = v / (1.0f + std::exp(-v)) * u;
      }
      else if (rw) v *= rw[r];
      out.set(r * NO + j, v);
    }
  return out;
}

Check compare_to_cublas(const Params& problem, const Tensor& got, const Tensor& cublas) {
  const GmmSpec s = GmmSpec::parse(problem);
  double sq = 0;
  for (std::int64_t i = 0; i < cublas.numel(); ++i) sq += cublas.get(i) * cublas.get(i);
  const double rms = cublas.numel() ? std::sqrt(sq / static_cast<double>(cublas.numel())) : 0.0;
  const double ulp = s.dtype == DType::bf16 ? 1.0 / 128 : 1.0 / 1024;
  Check c = compare_close(std::string(s.out_name()) + " (every element vs cuBLAS per expert)", got, cublas,
                          s.dtype == DType::bf16 ? 4e-3 : 1e-3, ulp, ulp * 0.25 * rms);
  return c;
}

}  // namespace moe::gmm
