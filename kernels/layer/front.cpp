#include "layer/front.hpp"

#include <algorithm>
#include <cstdint>

#include "common/emu_backend.hpp"
#include "dispatch/spec.hpp"
#include "gmm/family.hpp"
#include "layer/front_launch.hpp"
#include "layer/stages.hpp"
#include "moe/cuda_launch_api.hpp"
#include "moe/error.hpp"
#include "router/cuda.hpp"

namespace moe {

namespace {

using layer_front::kShapes;

router::CudaConfig shape_config(int i) { return router::CudaConfig{kShapes[i].lanes, kShapes[i].epl, kShapes[i].vec * 2, 4}; }

// The first front row shape that routes the problem, or -1.
int shape_for(const RouterSpec& r) {
  for (int i = 0; i < layer_front::kShapeCount; ++i)
    if (router::cuda_invalid_reason(r, shape_config(i)).empty()) return i;
  return -1;
}

std::string shape_list() {
  std::string s;
  for (const auto& k : kShapes)
    s += (s.empty() ? "" : " ") + std::to_string(k.lanes) + "/" + std::to_string(k.epl) + "/" + std::to_string(k.vec * 2);
  return s;
}

}  // namespace

std::vector<ParamSpec> front_config_params() {
  return {choice_param("path", "stages", {"stages", "decode"},
                       "stages: router and dispatch as their own kernels; decode: one kernel routes, aligns and gathers "
                       "a batch of at most 64 tokens (cuda and emu backends)"),
          int_param("front_ctas", 0, 0, 1024,
                    "path=decode: CTAs of the front kernel, each routing the whole batch and gathering a share of the "
                    "rows (0: one per 16 rows the batch can take, at most one per SM)"),
          int_param("fold_combine", 0, 0, 1,
                    "path=decode: 1: gmm down's kernel also does combine's work (the last CTA to finish a column "
                    "block sums every token's rows there, in slot order, as combine does): one kernel fewer; 0: "
                    "combine runs as its own kernel"),
          int_param("l2_prefetch", 0, 0, 2,
                    "path=decode: once it has routed, the front sends the active experts' weights toward L2, so "
                    "their stream starts before up's kernel does: 0: none; 1: w13 (up's); 2: w13, then w2 (down's). "
                    "At most 3/4 of the device's L2 in all, an even share per active expert")};
}

int l2_prefetch(const Params& c) { return decode_path(c) && c.has("l2_prefetch") ? static_cast<int>(c.i("l2_prefetch")) : 0; }

bool fold_combine(const Params& c) { return decode_path(c) && c.has("fold_combine") && c.i("fold_combine") == 1; }

bool decode_path(const Params& c) { return c.has("path") && c.s("path") == "decode"; }

std::string front_invalid_reason(Backend b, const Params& L, const DeviceInfo& dev) {
  if (b == Backend::cpu)
    return "path=decode runs the fused front kernel, which the cpu backend does not have: use path=stages or "
           "--backend cuda|emu";
  const auto stages = layer_stages(L);
  const RouterSpec r = RouterSpec::from(stages[0].problem);
  const DispatchSpec d = DispatchSpec::parse(stages[1].problem);
  if (r.tokens > layer_front::kMaxTokens)
    return "path=decode routes the whole batch in each CTA, at most " + std::to_string(layer_front::kMaxTokens) +
           " tokens; this call has " + std::to_string(r.tokens) + ": use path=stages";
  if (dtype_size(r.dtype) != 2) return "path=decode reads 16-bit logits, not " + std::string(dtype_name(r.dtype));
  if (shape_for(r) < 0)
    return "path=decode has no row shape for " + std::to_string(r.experts) + " experts (lanes/epl/vec_bytes " +
           shape_list() + "; the router's reason for the widest: " +
           router::cuda_invalid_reason(r, shape_config(layer_front::kShapeCount - 1)) + "): use path=stages";
  if (d.local() < 1 || d.local() > 32767)
    return "path=decode aligns 1 to 32767 local experts, this layer has " + std::to_string(d.local());
  if (!d.fp8 && (d.D * static_cast<std::int64_t>(dtype_size(d.dtype))) % 16)
    return "path=decode copies rows 16 bytes at a time: hidden must be a multiple of 8, got " + std::to_string(d.D);
  if (d.fp8 && d.D % 128) return "path=decode quantizes groups of 128: hidden must be a multiple of 128";
  const std::size_t smem = layer_front::smem_bytes(d.local(), d.slots());
  const std::size_t limit = dev.smem_optin ? dev.smem_optin : 48 * 1024;
  if (smem > limit)
    return "path=decode needs " + std::to_string(smem) + " bytes of shared memory per CTA for " +
           std::to_string(d.local()) + " local experts and " + std::to_string(d.slots()) + " slots, the device has " +
           std::to_string(limit) + ": use path=stages";
  return "";
}

int front_ctas(const Params& L, const Params& c, int sm_count) {
  if (c.has("front_ctas") && c.i("front_ctas") > 0) return static_cast<int>(c.i("front_ctas"));
  const DispatchSpec d = DispatchSpec::parse(layer_stages(L)[1].problem);
  // Each routed slot brings at most A rows (its own and its expert's padding).
  const std::int64_t rows = std::min(d.max_rows(), d.slots() * d.A);
  return static_cast<int>(std::clamp<std::int64_t>((rows + 15) / 16, 1, std::max(1, sm_count)));
}

void run_front(Backend b, const Params& L, const Params& c, const RefMap& in, const RefMap& out,
               const LaunchContext& ctx, std::array<int, 2> map_bm) {
  const DeviceInfo dev = b == Backend::emu ? emu_device_info() : DeviceInfo{};
  if (b != Backend::cuda && b != Backend::emu) throw Error(front_invalid_reason(b, L, dev));
  const auto stages = layer_stages(L);
  const RouterSpec r = RouterSpec::from(stages[0].problem);
  const DispatchSpec d = DispatchSpec::parse(stages[1].problem);
  const int shape = shape_for(r);
  if (r.tokens > layer_front::kMaxTokens || shape < 0 || d.local() < 1 || d.local() > 32767)
    throw Error("decode front: " + front_invalid_reason(b, L, dev));
  const TensorRef& x = need(in, "x");
  const TensorRef& xs = need(out, "x_sorted");
  const TensorRef& src = need(out, "src");
  if (need(in, "logits").numel() != r.tokens * r.experts || x.numel() != d.T * d.D ||
      need(out, "ids").numel() != d.slots() || need(out, "weights").numel() != d.slots() ||
      need(out, "dst").numel() != d.slots() || need(out, "offsets").numel() != d.local() + 1 ||
      xs.numel() != src.numel() * d.D)
    throw Error("decode front: tensor shapes do not match the layer problem");
  const auto misaligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 != 0; };
  if (misaligned(x.data) || misaligned(xs.data) || misaligned(need(in, "logits").data))
    throw Error("decode front: logits, x and x_sorted must be 16-byte aligned");
  layer_front::Args a;
  const float* bias = r.bias ? need(in, "bias").as<const float>() : nullptr;
  a.route = router::make_kernel_args(r, shape_config(shape), need(in, "logits").data, bias, nullptr, nullptr);
  a.x = x.data;
  a.x_sorted = xs.data;
  a.x_scale = d.fp8 ? need(out, "x_scale").as<float>() : nullptr;
  a.weights = need(out, "weights").as<float>();
  a.ids = need(out, "ids").as<std::int32_t>();
  a.offsets = need(out, "offsets").as<std::int32_t>();
  a.src = src.as<std::int32_t>();
  a.dst = need(out, "dst").as<std::int32_t>();
  a.rows = src.numel();
  a.D = d.D;
  a.K = static_cast<int>(d.K);
  a.e0 = static_cast<int>(d.e0);
  a.local = static_cast<int>(d.local());
  a.E_total = static_cast<int>(d.E_total);
  a.A = static_cast<int>(d.A);
  a.row_bytes = static_cast<int>(d.D * static_cast<std::int64_t>(dtype_size(d.dtype)));
  a.fp8 = d.fp8;
  a.ue8m0 = d.ue8m0;
  for (int j = 0; j < 2; ++j) {
    if (map_bm[j] <= 0) continue;
    const TensorRef& m = need(out, j == 0 ? "up_map" : "down_map");
    if (m.nbytes() < gmm_tile_map_bytes(a.rows, map_bm[j], d.local()) || m.dtype != DType::i32 ||
        reinterpret_cast<std::uintptr_t>(m.data) % 16)
      throw Error("decode front: the tile map for block_m=" + std::to_string(map_bm[j]) + " needs " +
                  std::to_string(gmm_tile_map_bytes(a.rows, map_bm[j], d.local())) +
                  " bytes of 16-byte aligned int32, got " + std::to_string(m.nbytes()));
    a.map[j] = m.as<std::int32_t>();
    a.map_bm[j] = map_bm[j];
    a.map_tiles[j] = static_cast<int>((a.rows + map_bm[j] - 1) / map_bm[j] + d.local());
  }
  if (const int mode = l2_prefetch(c); mode > 0) {
    const std::size_t l2 = b == Backend::emu ? dev.l2_bytes : cached_l2_bytes(launch_device());
    a.budget = static_cast<long long>(l2 / 4 * 3);
    for (int j = 0; j < mode; ++j) {
      // One block per local expert, as the layer holds them; a block that is not a whole number of
      // 16-byte units (no model's is) is not sent.
      const TensorRef& w = need(in, j == 0 ? "w13" : "w2");
      const std::size_t per = w.nbytes() / static_cast<std::size_t>(d.local());
      if (w.nbytes() % static_cast<std::size_t>(d.local()) || per % 16 || reinterpret_cast<std::uintptr_t>(w.data) % 16)
        continue;
      a.w[j] = static_cast<const unsigned char*>(w.data);
      a.w_bytes[j] = static_cast<long long>(per);
    }
  }
  if (const auto it = out.find("fold_done"); it != out.end()) {
    if (it->second.dtype != DType::i32) throw Error("decode front: fold_done holds int32 counters");
    a.zero = it->second.as<std::int32_t>();
    a.zero_n = static_cast<int>(it->second.numel());
  }
  if (r.tokens <= 0) return;
  if (b == Backend::emu) return layer_front::launch_emu(a, shape, front_ctas(L, c, dev.sm_count), nullptr);
  layer_front::launch_cuda(a, shape, front_ctas(L, c, cached_sm_count(launch_device())), ctx.stream);
}

}  // namespace moe
