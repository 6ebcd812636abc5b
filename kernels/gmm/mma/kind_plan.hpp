#pragma once
// What the kernel kinds walking the mma kernel's tile map share on the host: the shape fields of
// their KernelArgs (every kind, this one too), and for the kinds with arguments of their own
// (fp8_mma, w4_mma: `Args`, holding the KernelArgs as `b`) a plan, what one call launches made
// once per config, and the call that binds its tensors and launches it.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gmm/mma/cuda_configs.hpp"
#include "moe/cuda_launch_api.hpp"
#include "moe/error.hpp"

namespace moe::gmm::cuda {

// N-tiles of tile `t` over the stage's outputs (up's tiles hold block_n/2 h columns).
inline int kind_n_tiles(const GmmSpec& s, const TileShape& t) {
  const std::int64_t per = s.down ? t.bn : t.bn / 2;
  return static_cast<int>((s.n_out() + per - 1) / per);
}

// The KernelArgs' shape fields and expert function every kind's plan_args shares for `rows` rows
// of config `c`, K split in slices of `bk`; `what` ("4-bit ", or "") names the kind when the rows
// make more tiles than the kernels' 32-bit tile index reaches.
inline KernelArgs kind_shape_args(const GmmSpec& s, const Config& c, std::int64_t rows, int bk, const char* what) {
  KernelArgs b;
  b.rows = static_cast<int>(rows);
  b.k_dim = static_cast<int>(s.k_dim());
  b.n_out = static_cast<int>(s.n_out());
  b.n_w = static_cast<int>(s.n_w());
  b.experts = static_cast<int>(s.e_local());
  b.split = c.split;
  b.n_tiles = kind_n_tiles(s, c.shape);
  b.map_tiles = static_cast<int>((rows + c.shape.bm - 1) / c.shape.bm + s.e_local());
  // The kernel walks tile indices in 32 bits, a grid past the last one.
  if (static_cast<double>(b.map_tiles) * b.n_tiles * b.split >= 2147483647.0 - (1 << 20))
    throw Error("gmm cuda: " + std::to_string(rows) + " rows make more " + what +
                "tiles than the kernel can index; use fewer tokens");
  b.split_div = fast_div_by(b.split);
  b.n_tiles_div = fast_div_by(b.n_tiles);
  b.fn = expert_fn_args(s);  // before set_k_slices, which reads its up_rows
  set_k_slices(b, bk);
  return b;
}

template <class Args>
struct KindPlan : LaunchPlan {
  GmmSpec spec;  // the problem and config it was planned for: a planned call parses neither again
  Config config;
  Args args;
  std::vector<PlannedLaunch> launches;
};

// The plan's common start: the shape fields for `rows` (plan_args), then, with rows, the SM count
// and the schedule kernel that writes the tile map. The kind adds its own launches after it.
template <class Args, class PlanArgs>
std::shared_ptr<KindPlan<Args>> start_plan(const GmmSpec& s, const Config& c, std::int64_t rows, PlanArgs&& plan_args) {
  auto p = std::make_shared<KindPlan<Args>>();
  p->spec = s;
  p->config = c;
  p->args = plan_args(s, c, rows);
  if (rows == 0) return p;
  p->args.b.sm_count = cached_sm_count(launch_device());
  p->launches.push_back(plan_schedule(p->args.b, c.shape.bm));
  return p;
}

// The kernels that launch (an empty grid does not), counted once the plan is complete.
template <class Args>
void count_kernels(KindPlan<Args>& p) {
  for (const PlannedLaunch& l : p.launches) p.kernels += l.grid > 0;
}

// A call: planned (or planned now, when there is no plan or it was made for other rows), its
// tensors bound into a copy of the planned arguments, its launches issued on `stream` (all but the
// schedule kernel when the call brings its tile map, and split-K's finalize when down folds combine).
template <class Args, class Plan, class Bind, class Launch>
void run_kind(const GmmSpec& s, const Config& c, const RefMap& in, const RefMap& out, void* workspace,
              std::size_t ws_bytes, void* stream, const KindPlan<Args>* planned, Plan&& plan, Bind&& bind,
              Launch&& launch) {
  const std::int64_t R = need(in, s.act_name()).shape.at(0);
  std::shared_ptr<const KindPlan<Args>> own;
  if (!planned || planned->args.b.rows != R) {
    own = plan(s, c, R);
    planned = own.get();
  }
  if (R == 0) return;
  Args a = planned->args;
  bind(a, s, c, in, out, workspace, ws_bytes);
  const bool map = bind_given_tile_map(in, a.b, c.shape.bm);
  const bool fold = bind_fold(a.b, s, c, in, out);
  for (const PlannedLaunch& l : planned->launches)
    if (!(map && l.schedule) && !(fold && l.finalize)) launch(l, a, stream);
}

}  // namespace moe::gmm::cuda
