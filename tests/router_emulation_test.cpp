// The cuda router's row algorithm (kernels/router/cuda_row.hpp) run on the host under a warp
// emulator: 32 lanes as fibers that meet at every shuffle/reduction, as a warp does. Every
// compiled kernel shape is checked against the reference on the edge-case matrix, so the
// layout, group, tie and NaN logic is tested on machines without a GPU. The emulator also
// fails on divergence: a collective reached by some lanes only, or with different operands.
#include <gtest/gtest.h>
#include <ucontext.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <utility>

#include "common/validate.hpp"
#include "router/cuda.hpp"
#include "router/cuda_row.hpp"
#include "router/cuda_shapes.hpp"
#include "router_cases.hpp"
#include "tuner/harness.hpp"

namespace {

using namespace moe;

class WarpEmulator {
 public:
  enum Op { kXor, kIdx, kMax, kMin };

  // Runs body(lane) for the 32 lanes in lockstep between collectives. Throws on divergence.
  void run(const std::function<void(int)>& body) {
    body_ = &body;
    current() = this;
    error_.clear();
    for (int l = 0; l < 32; ++l) {
      if (!stacks_[l]) stacks_[l] = std::make_unique<char[]>(kStack);
      getcontext(&lanes_[l]);
      lanes_[l].uc_stack.ss_sp = stacks_[l].get();
      lanes_[l].uc_stack.ss_size = kStack;
      lanes_[l].uc_link = &main_;
      makecontext(&lanes_[l], reinterpret_cast<void (*)()>(&WarpEmulator::entry), 1, l);
      done_[l] = false;
    }
    for (;;) {
      for (int l = 0; l < 32; ++l) {
        posted_[l] = false;
        if (!done_[l]) swapcontext(&main_, &lanes_[l]);
      }
      int done = 0;
      for (int l = 0; l < 32; ++l) done += done_[l];
      if (done == 32) break;
      if (done) throw std::runtime_error("divergence: " + std::to_string(done) + " lanes finished while others wait at a collective");
      const Post& p0 = post_[0];
      for (int l = 1; l < 32; ++l) {
        const Post& p = post_[l];
        if (p.op != p0.op || p.width != p0.width || (p.op == kXor && p.arg != p0.arg))
          throw std::runtime_error("divergence: lanes 0 and " + std::to_string(l) + " meet at different collectives");
      }
      for (int l = 0; l < 32; ++l) {
        switch (p0.op) {
          case kXor:
            if (p0.arg <= 0 || p0.arg >= 32) throw std::runtime_error("xor shuffle offset out of range");
            result_[l] = post_[l ^ p0.arg].value;
            break;
          case kIdx: {
            const int w = p0.width;
            result_[l] = post_[(l / w) * w + ((post_[l].arg % w) + w) % w].value;
            break;
          }
          case kMax:
          case kMin: {
            unsigned r = post_[0].value;
            for (int q = 1; q < 32; ++q) r = p0.op == kMax ? std::max(r, post_[q].value) : std::min(r, post_[q].value);
            result_[l] = r;
            break;
          }
        }
      }
    }
  }

  unsigned collective(int lane, Op op, unsigned value, int arg, int width) {
    post_[lane] = {op, value, arg, width};
    posted_[lane] = true;
    swapcontext(&lanes_[lane], &main_);
    return result_[lane];
  }

 private:
  struct Post {
    Op op;
    unsigned value;
    int arg, width;
  };
  static constexpr std::size_t kStack = 256 * 1024;
  static WarpEmulator*& current() {
    static thread_local WarpEmulator* c = nullptr;
    return c;
  }
  static void entry(int lane) {
    WarpEmulator* self = current();
    (*self->body_)(lane);
    self->done_[lane] = true;
  }

  const std::function<void(int)>* body_ = nullptr;
  ucontext_t main_{}, lanes_[32]{};
  std::unique_ptr<char[]> stacks_[32];
  Post post_[32]{};
  unsigned result_[32]{};
  bool done_[32]{}, posted_[32]{};
  std::string error_;
};

// The Lane interface of cuda_row.hpp on the emulator.
struct HostLane {
  WarpEmulator* em;
  int id;
  int lane() const { return id; }
  unsigned xor_u(unsigned v, int off) { return em->collective(id, WarpEmulator::kXor, v, off, 32); }
  float xor_f(float v, int off) { return router::kern::u2f(xor_u(router::kern::f2u(v), off)); }
  unsigned idx_u(unsigned v, int src, int width) { return em->collective(id, WarpEmulator::kIdx, v, src, width); }
  unsigned max_u(unsigned v) { return em->collective(id, WarpEmulator::kMax, v, 0, 32); }
  unsigned min_u(unsigned v) { return em->collective(id, WarpEmulator::kMin, v, 0, 32); }
};

// A "launch" of shape I: every warp of the grid, one after the other.
template <int I>
void emulate_shape(const router::kern::Args& a, long long nwarps) {
  constexpr router::KernelShape s = router::kShapes[I];
  WarpEmulator em;
  for (long long w = 0; w < nwarps; ++w)
    em.run([&](int lane) {
      HostLane ln{&em, lane};
      router::kern::RowKernel<s.lanes, s.epl, s.vec, s.esize>::rows(a, ln, w, nwarps);
    });
}

using EmulateFn = void (*)(const router::kern::Args&, long long);
template <int... Is>
constexpr std::array<EmulateFn, sizeof...(Is)> make_table(std::integer_sequence<int, Is...>) {
  return {&emulate_shape<Is>...};
}
const auto kEmulate = make_table(std::make_integer_sequence<int, router::kShapeCount>{});

struct EmuResult {
  TensorMap outputs;
  Validation validation;
};

EmuResult emulate(const tuner::Prepared& p, const router::CudaConfig& cfg, long long nwarps) {
  const RouterSpec sp = RouterSpec::from(p.problem);
  EmuResult r;
  r.outputs = allocate(p.output_specs);
  for (auto& [k, t] : r.outputs) poison_host(t.ref());
  const float* bias = sp.bias ? p.inputs.at("bias").data<float>() : nullptr;
  const auto args = router::make_kernel_args(sp, cfg, p.inputs.at("logits").raw(), bias,
                                             r.outputs.at("weights").data<float>(),
                                             r.outputs.at("ids").data<std::int32_t>());
  const int shape = router::cuda_shape_index(sp, cfg);
  EXPECT_GE(shape, 0);
  kEmulate[shape](args, nwarps);
  r.validation = p.family->validate(p.problem, p.inputs, r.outputs, p.reference);
  return r;
}

std::string cfg_str(const router::CudaConfig& c) {
  return "lanes=" + std::to_string(c.lanes) + " epl=" + std::to_string(c.epl) + " vec_bytes=" + std::to_string(c.vec_bytes);
}

// Every compiled shape valid for the case (the emulator has no warps-per-CTA: one per shape),
// on two warps so the row loop's stride and prefetch run too.
void check_case(const router_cases::Case& c, const std::string& dtype, std::int64_t T) {
  const Params problem = router_cases::with(c.problem, T, dtype);
  const auto given = router_cases::inputs(problem, c.data, 3);
  InputOptions opt;
  opt.seed = 11;
  const auto p = tuner::prepare(router_family(), problem, opt, given);
  const RouterSpec sp = RouterSpec::from(p.problem);
  int ran = 0;
  for (const auto& cfg : router::cuda_space(sp, true)) {
    if (cfg.warps != 4) continue;
    SCOPED_TRACE(c.name + " " + dtype + " T=" + std::to_string(T) + " " + cfg_str(cfg));
    const auto r = emulate(p, cfg, 2);
    EXPECT_TRUE(r.validation.ok) << r.validation.summary();
    // Sigmoid scores are the reference's own float arithmetic here (same libm), and group
    // scores are fp32 sums on both sides: the ids must be identical, not merely near. Tie
    // data has only exact ties or wide gaps, so its ids are exact under softmax too (the
    // tolerant validation alone would accept a wrong tie-break).
    if (sp.scoring == RouterScoring::sigmoid || c.data == "ties") {
      const Check ids = compare_exact("ids", r.outputs.at("ids"), p.reference.at("ids"));
      EXPECT_TRUE(ids.ok) << ids.detail;
    }
    ++ran;
  }
  if (sp.experts <= router::kMaxExperts) EXPECT_GT(ran, 0) << "no cuda config for " << c.name;
}

TEST(RouterEmulation, PresetsEveryShape) {
  for (const auto& c : router_cases::presets())
    for (const char* dt : {"bf16", "f32"}) check_case(c, dt, 7);
}

TEST(RouterEmulation, EdgesEveryShape) {
  for (const auto& c : router_cases::edges())
    for (const char* dt : {"bf16", "f16", "f32"}) check_case(c, dt, 5);
}

TEST(RouterEmulation, ManyRowsPerWarpAndPartialLastStep) {
  // lanes < 32 route several rows per warp; 37 rows leave a partial last step.
  const router_cases::Case c{"e16", router_cases::problem(16, 4, 1, 4, 2, "sigmoid", 1, 1, 2.0)};
  check_case(c, "bf16", 37);
  check_case(c, "f32", 37);
}

TEST(RouterEmulation, DetectsABrokenKernelArgument) {
  // The checks above must be able to fail: a wrong k in the kernel arguments leaves slots
  // unwritten, a wrong group count picks the wrong experts.
  const Params problem = router_cases::with(router_cases::problem(256, 8, 1, 8, 4, "sigmoid", 1, 1, 2.5), 6, "bf16");
  InputOptions opt;
  const auto p = tuner::prepare(router_family(), problem, opt);
  const RouterSpec sp = RouterSpec::from(p.problem);
  const auto cfg = router::cuda_default(sp);
  TensorMap out = allocate(p.output_specs);
  for (auto& [k, t] : out) poison_host(t.ref());
  auto args = router::make_kernel_args(sp, cfg, p.inputs.at("logits").raw(), p.inputs.at("bias").data<float>(),
                                       out.at("weights").data<float>(), out.at("ids").data<std::int32_t>());
  args.k = 7;
  kEmulate[router::cuda_shape_index(sp, cfg)](args, 1);
  EXPECT_FALSE(p.family->validate(p.problem, p.inputs, out, p.reference).ok);
  args.k = 8;
  args.TG = 1;
  kEmulate[router::cuda_shape_index(sp, cfg)](args, 1);
  EXPECT_FALSE(p.family->validate(p.problem, p.inputs, out, p.reference).ok);
}

}  // namespace
