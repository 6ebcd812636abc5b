// The host side of kernel=cublas and kernel=cublaslt: the plan (pinned host buffers for the row
// counts and the grouped GEMM's pointer arrays, cuBLASLt's descriptors and the algorithm it chose
// per expert shape) and a call: the offsets to the host, the library's GEMM, moebench's epilogue.
//
// Both libraries take each expert's row count as a host value (cublasGemmGroupedBatchedEx's m, n
// and k are host arrays; a cuBLASLt matmul's shapes are host matrix layouts), while dispatch
// leaves the offsets on the device. So every call copies them to the host and waits for them,
// as any caller of these APIs must: the copy and the wait are inside the timed call, the plan
// says so (it is a HostWait: timed with CUDA events), and such a call cannot be captured
// in a CUDA graph.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <tuple>

#include "gmm/alignment.hpp"
#include "gmm/cublas/configs.hpp"
#include "gmm/cublas/kernels.hpp"
#include "gmm/wgmma/wgmma_configs.hpp"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"

namespace moe::gmm::cublas {

namespace {

void blas_check(cublasStatus_t st, const std::string& what) {
  if (st != CUBLAS_STATUS_SUCCESS)
    throw Error("gmm cuda: kernel=cublas: " + what + " failed: " + cublasGetStatusName(st) + " (" +
                cublasGetStatusString(st) + ")");
}

void lt_check(cublasStatus_t st, const std::string& what) {
  if (st != CUBLAS_STATUS_SUCCESS)
    throw Error("gmm cuda: kernel=cublaslt: " + what + " failed: " + cublasLtGetStatusName(st) + " (" +
                cublasLtGetStatusString(st) + ")");
}

// cublasCreate sets up the handle's own workspace and takes milliseconds: one handle per thread
// and device, made on first use (a bench's warm-up call) and kept for the life of the process
// (destroying it at exit could come after the CUDA runtime's own teardown).
cublasHandle_t blas_handle(int device) {
  thread_local std::map<int, cublasHandle_t> handles;
  if (auto it = handles.find(device); it != handles.end()) return it->second;
  cublasHandle_t h = nullptr;
  blas_check(cublasCreate(&h), "cublasCreate");
  handles[device] = h;
  return h;
}

struct Pinned {
  void* p = nullptr;
  void alloc(std::size_t bytes) { cuda_check(cudaMallocHost(&p, bytes), "cudaMallocHost (the row counts' host copy)"); }
  ~Pinned() {
    if (p) cudaFreeHost(p);
  }
};

// The largest power of two (up to 256) the address is a multiple of: what cuBLASLt's heuristic is
// told it may assume.
std::uint32_t alignment(const void* p) {
  const auto v = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t low = v & (~v + 1);
  return static_cast<std::uint32_t>(low == 0 || low > 256 ? 256 : low);
}

struct LtShape {
  cublasLtMatrixLayout_t b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

const char* out_name(cudaDataType_t t) { return t == CUDA_R_32F ? "fp32" : "bf16"; }

}  // namespace

struct PlanState {
  std::mutex mu;
  bool ready = false;
  int device = 0;
  Pinned offsets, pointers;
  cudaEvent_t copied = nullptr;  // the last call's pointer-array copy: the pinned buffer is free after it
  cublasLtHandle_t lt = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr;
  // (rows, alignment of the expert's activation rows) -> its layouts and cuBLASLt's algorithm.
  std::map<std::tuple<std::int64_t, std::uint32_t>, LtShape> shapes;
  ~PlanState() {
    for (auto& [k, sh] : shapes) {
      if (sh.b) cublasLtMatrixLayoutDestroy(sh.b);
      if (sh.d) cublasLtMatrixLayoutDestroy(sh.d);
    }
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (desc) cublasLtMatmulDescDestroy(desc);
    if (lt) cublasLtDestroy(lt);
    if (copied) cudaEventDestroy(copied);
  }
};

namespace {

// Cached per-expert shapes beyond this are dropped (a server sees a bounded set of row counts).
constexpr std::size_t kMaxShapes = 4096;

void set_desc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const void* v, std::size_t n,
              const char* what) {
  lt_check(cublasLtMatmulDescSetAttribute(d, attr, v, n), std::string("cublasLtMatmulDescSetAttribute(") + what + ")");
}

// Once per plan, on its first call (CPU-side planning asks the device nothing).
void init(PlanState& st, const GmmSpec& s, const Config& c) {
  cuda_check(cudaGetDevice(&st.device), "cudaGetDevice");
  const auto E = static_cast<std::size_t>(s.e_local());
  st.offsets.alloc((E + 1) * sizeof(std::int32_t));
  if (c.kind == Kind::cublas) {
    st.pointers.alloc(3 * E * sizeof(void*));
    cuda_check(cudaEventCreateWithFlags(&st.copied, cudaEventDisableTiming), "cudaEventCreate");
  } else {
    lt_check(cublasLtCreate(&st.lt), "cublasLtCreate");
    lt_check(cublasLtMatmulDescCreate(&st.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    // TN, as fp8 on Hopper requires: A = the expert's weights [n_w, K] (K-major, op T), B = its
    // rows [rows, K] (K-major), D column-major [n_w, rows] = row-major [rows, n_w].
    const cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
    set_desc(st.desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t), "TRANSA");
    set_desc(st.desc, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof(n), "TRANSB");
    const std::int32_t blk = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F, vec = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    set_desc(st.desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &blk, sizeof(blk), "A_SCALE_MODE BLK128x128_32F");
    set_desc(st.desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &vec, sizeof(vec), "B_SCALE_MODE VEC128_32F");
    lt_check(cublasLtMatrixLayoutCreate(&st.a, CUDA_R_8F_E4M3, static_cast<std::uint64_t>(s.k_dim()),
                                        static_cast<std::uint64_t>(s.n_w()), s.k_dim()),
             "cublasLtMatrixLayoutCreate (weights)");
  }
  st.ready = true;
}

// The experts' row segments as the host reads them back (see the top of this file).
std::vector<Group> host_groups(const GmmSpec& s, PlanState& st, const std::int32_t* offsets, std::int64_t rows,
                               cudaStream_t stream) {
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  cuda_check(cudaStreamIsCapturing(stream, &capturing), "cudaStreamIsCapturing");
  if (capturing != cudaStreamCaptureStatusNone)
    throw Error("gmm cuda: kernel=cublas/cublaslt reads the experts' row counts on the host every call (the library "
                "takes them as host arguments), which a CUDA graph cannot capture: use kernel=mma or kernel=wgmma there");
  auto* host = static_cast<std::int32_t*>(st.offsets.p);
  cuda_check(cudaMemcpyAsync(host, offsets, static_cast<std::size_t>(s.e_local() + 1) * sizeof(std::int32_t),
                             cudaMemcpyDeviceToHost, stream),
             "cudaMemcpyAsync (offsets to the host)");
  cuda_check(cudaStreamSynchronize(stream), "gmm cuda: waiting for the offsets on the host");
  check_host_offsets(host, s.e_local(), rows);
  return groups(host, s.e_local());
}

void check_workspace(const Layout& l, void* ws, std::size_t bytes, const Config& c) {
  const char* k = c.kind == Kind::cublas ? "kernel=cublas" : "kernel=cublaslt";
  if (!ws || bytes < l.total)
    throw Error(std::string("gmm cuda: ") + k + " needs " + std::to_string(l.total) + " bytes of workspace, got " +
                std::to_string(bytes));
  require_aligned(ws, 256, "cuda", "the workspace", std::string(k) + " carves 256-byte aligned arrays from it");
}

template <class T>
T* at(void* base, std::size_t off) {
  return reinterpret_cast<T*>(static_cast<unsigned char*>(base) + off);
}

void run_grouped(const GmmSpec& s, PlanState& st, const RefMap& in, const RefMap& out, void* ws, const Layout& l,
                 cudaStream_t stream) {
  const TensorRef& act = need(in, s.act_name());
  const auto R = act.shape.at(0);
  const auto* offsets = need(in, "offsets").as<const std::int32_t>();
  const void* weight = need(in, s.weight_name()).data;
  auto* dst = need(out, s.out_name()).as<std::uint16_t>();
  const std::string why = "cuBLAS's 16-bit GEMM reads and writes 16-byte aligned rows";
  require_aligned(act.data, 16, "cuda", s.act_name(), why);
  require_aligned(weight, 16, "cuda", s.weight_name(), why);
  require_aligned(dst, 16, "cuda", s.out_name(), why);
  const float* rw = s.routed_weight ? need(in, "row_weight").as<const float>() : nullptr;
  if (rw) require_aligned(rw, 4, "cuda", "row_weight", "read as fp32");

  const std::vector<Group> gs = host_groups(s, st, offsets, R, stream);
  void* gemm_out = s.down ? static_cast<void*>(dst) : at<void>(ws, l.gate_up);
  if (!gs.empty()) {
    const GroupedArgs g = grouped_args(s, gs, reinterpret_cast<std::uintptr_t>(act.data),
                                       reinterpret_cast<std::uintptr_t>(weight),
                                       reinterpret_cast<std::uintptr_t>(gemm_out), s.elem_bytes(), s.elem_bytes());
    const std::size_t G = gs.size();
    // The pointer arrays live on the device; the last call's copy out of the pinned buffer must
    // be done before it is written again (it may have been on another stream).
    cuda_check(cudaEventSynchronize(st.copied), "waiting for the last call's pointer copy");
    auto* hp = static_cast<std::uintptr_t*>(st.pointers.p);
    for (std::size_t i = 0; i < G; ++i) hp[i] = g.a[i], hp[G + i] = g.b[i], hp[2 * G + i] = g.c[i];
    void** dp = at<void*>(ws, l.pointers);
    cuda_check(cudaMemcpyAsync(dp, hp, 3 * G * sizeof(void*), cudaMemcpyHostToDevice, stream),
               "cudaMemcpyAsync (cuBLAS's pointer arrays)");
    cuda_check(cudaEventRecord(st.copied, stream), "cudaEventRecord");
    const cublasHandle_t h = blas_handle(st.device);
    blas_check(cublasSetStream(h, stream), "cublasSetStream");
    const std::vector<cublasOperation_t> ta(G, CUBLAS_OP_T), tb(G, CUBLAS_OP_N);
    const std::vector<float> alpha(G, 1.0f), beta(G, 0.0f);
    const std::vector<int> size(G, 1);
    const cudaDataType_t dt = s.dtype == DType::bf16 ? CUDA_R_16BF : CUDA_R_16F;
    blas_check(cublasGemmGroupedBatchedEx(h, ta.data(), tb.data(), g.m.data(), g.n.data(), g.k.data(), alpha.data(),
                                          reinterpret_cast<const void* const*>(dp), dt, g.lda.data(),
                                          reinterpret_cast<const void* const*>(dp + G), dt, g.ldb.data(), beta.data(),
                                          reinterpret_cast<void* const*>(dp + 2 * G), dt, g.ldc.data(),
                                          static_cast<int>(G), size.data(), CUBLAS_COMPUTE_32F),
               "cublasGemmGroupedBatchedEx (" + std::to_string(G) + " experts with rows, n_w=" +
                   std::to_string(s.n_w()) + " K=" + std::to_string(s.k_dim()) + ")");
  }
  const bool bf16 = s.dtype == DType::bf16;
  if (!s.down) {
    wgmma::SiluArgs si;
    si.gu = at<const std::uint16_t>(ws, l.gate_up);
    si.offsets = offsets;
    si.h = dst;
    si.rows = static_cast<int>(R);
    si.inter = static_cast<int>(s.intermediate);
    si.experts = static_cast<int>(s.e_local());
    return wgmma::launch_silu(si, bf16, stream);
  }
  if (rw)
    launch_scale_rows({dst, nullptr, rw, offsets, static_cast<int>(R), static_cast<int>(s.hidden),
                       static_cast<int>(s.e_local())},
                      bf16, stream);
}

// cuBLASLt's layouts and algorithm for one expert's shape, found once (the heuristic takes tens of
// microseconds) and kept in the plan, as a serving engine keeps its matmul plans.
const LtShape& lt_shape(PlanState& st, const GmmSpec& s, std::int64_t rows, const void* b, const void* d,
                        cudaDataType_t dt, std::size_t lt_bytes) {
  const auto key = std::make_tuple(rows, alignment(b));
  if (auto it = st.shapes.find(key); it != st.shapes.end()) return it->second;
  if (st.shapes.size() >= kMaxShapes) {
    for (auto& [k, sh] : st.shapes) cublasLtMatrixLayoutDestroy(sh.b), cublasLtMatrixLayoutDestroy(sh.d);
    st.shapes.clear();
  }
  LtShape sh;
  const auto K = static_cast<std::uint64_t>(s.k_dim()), NW = static_cast<std::uint64_t>(s.n_w());
  lt_check(cublasLtMatrixLayoutCreate(&sh.b, CUDA_R_8F_E4M3, K, static_cast<std::uint64_t>(rows), s.k_dim()),
           "cublasLtMatrixLayoutCreate (rows)");
  lt_check(cublasLtMatrixLayoutCreate(&sh.d, dt, NW, static_cast<std::uint64_t>(rows), s.n_w()),
           "cublasLtMatrixLayoutCreate (output)");
  cublasLtMatmulPreference_t pref = nullptr;
  lt_check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  const std::uint32_t align_b = alignment(b), align_d = alignment(d);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &lt_bytes, sizeof(lt_bytes));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b, sizeof(align_b));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_d, sizeof(align_d));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_d, sizeof(align_d));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t hs =
      cublasLtMatmulAlgoGetHeuristic(st.lt, st.desc, st.a, sh.b, sh.d, sh.d, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (hs != CUBLAS_STATUS_SUCCESS || found == 0) {
    cublasLtMatrixLayoutDestroy(sh.b);
    cublasLtMatrixLayoutDestroy(sh.d);
    throw Error("gmm cuda: cuBLASLt has no fp8 algorithm for the 128x128 x 1x128 block-scaled e4m3 matmul of " +
                std::to_string(NW) + " weight rows by " + std::to_string(rows) + " token rows, K=" + std::to_string(K) +
                ", writing " + out_name(dt) + " (cublasLtMatmulAlgoGetHeuristic: " +
                (hs != CUBLAS_STATUS_SUCCESS ? std::string(cublasLtGetStatusName(hs)) : std::string("no result")) +
                "): use kernel=wgmma or kernel=mma");
  }
  sh.algo = result.algo;
  return st.shapes.emplace(key, sh).first->second;
}

void run_lt(const GmmSpec& s, const Config& c, PlanState& st, const RefMap& in, const RefMap& out, void* ws,
            const Layout& l, cudaStream_t stream) {
  const TensorRef& act = need(in, s.act_name());
  const auto R = act.shape.at(0);
  const auto* offsets = need(in, "offsets").as<const std::int32_t>();
  const auto* weight = need(in, s.weight_name()).as<const std::uint8_t>();
  const auto* act_scale = need(in, s.act_scale_name()).as<const float>();
  const auto* w_scale = need(in, s.weight_scale_name()).as<const float>();
  const std::string why = "cuBLASLt's fp8 matmul reads 16-byte aligned rows and scales";
  require_aligned(act.data, 16, "cuda", s.act_name(), why);
  require_aligned(weight, 16, "cuda", s.weight_name(), why);
  require_aligned(act_scale, 16, "cuda", s.act_scale_name(), why);
  require_aligned(w_scale, 16, "cuda", s.weight_scale_name(), why);
  require_aligned(need(out, s.out_name()).data, 16, "cuda", s.out_name(), "it is written 16 bytes at a time");
  const float* rw = s.routed_weight ? need(in, "row_weight").as<const float>() : nullptr;
  if (rw) require_aligned(rw, 4, "cuda", "row_weight", "read as fp32");

  const std::vector<Group> gs = host_groups(s, st, offsets, R, stream);
  const int E = static_cast<int>(s.e_local()), KB = static_cast<int>(s.k_groups()), NB = static_cast<int>(s.n_w() / 128);
  const int KB_PAD = static_cast<int>(padded_k_groups(s));
  float* act_out = at<float>(ws, l.act_scales);
  float* w_out = weight_scales_repacked(s) ? at<float>(ws, l.w_scales) : nullptr;
  launch_scale_layout({act_scale, act_out, w_scale, w_out, offsets, static_cast<int>(R), KB, E, NB, KB_PAD}, stream);
  const float* w_used = w_out ? w_out : w_scale;
  const std::int64_t w_ld = w_out ? KB_PAD : KB;

  const bool direct = s.down && !c.lt_f32;  // bf16 y_sorted straight from cuBLASLt
  const cudaDataType_t dt = direct ? CUDA_R_16BF : CUDA_R_32F;
  const std::size_t d_bytes = direct ? 2 : 4;
  auto* d_base = direct ? static_cast<unsigned char*>(need(out, s.out_name()).data) : at<unsigned char>(ws, l.gate_up);
  const auto K = s.k_dim(), NW = s.n_w();
  const float one = 1.0f, zero = 0.0f;
  for (const Group& g : gs) {
    const void* a = weight + static_cast<std::int64_t>(g.expert) * NW * K;
    const void* b = static_cast<const std::uint8_t*>(act.data) + g.begin * K;
    void* d = d_base + static_cast<std::size_t>(g.begin * NW) * d_bytes;
    const float* sa = w_used + static_cast<std::int64_t>(g.expert) * NB * w_ld;
    const float* sb = act_out + act_scale_base(g.begin, KB, g.expert);
    // The heuristic reads the scale pointers' alignment, so they are set before it runs.
    set_desc(st.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof(sa), "A_SCALE_POINTER");
    set_desc(st.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof(sb), "B_SCALE_POINTER");
    const LtShape& sh = lt_shape(st, s, g.rows, b, d, dt, l.lt_bytes);
    lt_check(cublasLtMatmul(st.lt, st.desc, &one, a, st.a, b, sh.b, &zero, d, sh.d, d, sh.d, &sh.algo,
                            at<void>(ws, l.lt), l.lt_bytes, stream),
             "cublasLtMatmul (expert " + std::to_string(g.expert) + ", " + std::to_string(g.rows) + " rows)");
  }
  auto* y = need(out, s.out_name()).as<std::uint16_t>();
  if (!s.down) {
    wgmma::SiluQuantLaunch q;
    q.gu = at<const float>(ws, l.gate_up);
    q.offsets = offsets;
    q.h = need(out, "h").as<std::uint8_t>();
    q.h_scale = need(out, "h_scale").as<float>();
    q.rows = static_cast<int>(R);
    q.inter = static_cast<int>(s.intermediate);
    q.experts = E;
    q.ue8m0 = s.ue8m0;
    return wgmma::launch_silu_quant(q, stream);
  }
  if (!direct)
    return launch_round_rows({y, at<const float>(ws, l.gate_up), rw, offsets, static_cast<int>(R),
                              static_cast<int>(s.hidden), E},
                             stream);
  if (rw) launch_scale_rows({y, nullptr, rw, offsets, static_cast<int>(R), static_cast<int>(s.hidden), E}, true, stream);
}

}  // namespace

std::shared_ptr<const Plan> plan(const GmmSpec& s, const Config& c, std::int64_t rows) {
  const std::string why = invalid_reason(s, c, DeviceInfo{});
  if (!why.empty()) throw Error("gmm cuda: " + why);
  auto p = std::make_shared<Plan>();
  p->spec = s;
  p->config = c;
  // The library launches its own kernels, as many as it decides: the bench counts ours only.
  p->kernels = -1;
  (void)rows;
  p->state = std::make_shared<PlanState>();
  return p;
}

void run(const GmmSpec& s, const Config& c, const RefMap& in, const RefMap& out, void* workspace,
         std::size_t workspace_bytes, void* stream, const Plan* planned) {
  const std::int64_t R = need(in, s.act_name()).shape.at(0);
  if (R == 0 || s.e_local() == 0) return;
  if (R > s.max_rows())
    throw Error("gmm cuda: " + std::to_string(R) + " rows are more than the " + std::to_string(s.max_rows()) +
                " the problem's tokens can route (the workspace is sized for those): raise --tokens");
  std::shared_ptr<const Plan> own;
  if (!planned) {
    own = plan(s, c, R);
    planned = own.get();
  }
  const Layout l = layout(s, c);
  check_workspace(l, workspace, workspace_bytes, c);
  PlanState& st = *planned->state;
  // One call at a time per plan: the pinned buffers and cuBLASLt's descriptor are the plan's.
  std::lock_guard<std::mutex> lock(st.mu);
  if (!st.ready) init(st, s, c);
  int device = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  if (device != st.device)
    throw Error("gmm cuda: a kernel=" + std::string(c.kind == Kind::cublas ? "cublas" : "cublaslt") +
                " plan made on device " + std::to_string(st.device) + " was called on device " +
                std::to_string(device) + ": plan once per device");
  auto* st_stream = static_cast<cudaStream_t>(stream);
  if (c.kind == Kind::cublas) return run_grouped(s, st, in, out, workspace, l, st_stream);
  run_lt(s, c, st, in, out, workspace, l, st_stream);
}

}  // namespace moe::gmm::cublas
