#include "layer/family.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <set>

#include "combine/family.hpp"
#include "common/emu_backend.hpp"
#include "common/host_wait.hpp"
#include "common/problem_params.hpp"
#include "common/rng.hpp"
#include "common/routing_gen.hpp"
#include "common/validate.hpp"
#include "common/w4_problem.hpp"
#include "dispatch/family.hpp"
#include "gmm/family.hpp"
#include "layer/front.hpp"
#include "layer/reference.hpp"
#include "layer/stage_configs.hpp"
#include "layer/stages.hpp"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "moe/programmatic_launch.hpp"
#include "router/family.hpp"

namespace moe {

namespace {

const char* const kStageKeys[] = {"router", "dispatch", "gmm_up", "gmm_down", "combine"};

std::vector<ParamSpec> layer_config_params() {
  std::vector<ParamSpec> v;
  for (const char* k : kStageKeys) {
    ParamSpec s;
    s.name = k;
    s.kind = ParamKind::Text;
    s.default_value = std::string("auto");
    s.help = std::string("the ") + k + " stage's config as NAME=VALUE;NAME=VALUE (auto: what runtime dispatch picks from the tuned tables; default: the family default)";
    v.push_back(s);
  }
  v.push_back(int_param("pdl", 1, 0, 1,
                        "1: launch each stage's kernels with programmatic dependent launch, so a kernel starts while "
                        "its predecessor finishes (cuda backend); 0: plain stream order"));
  for (ParamSpec& p : front_config_params()) v.push_back(std::move(p));
  return v;
}

bool is_fp8(const Params& L) { return L.s("dtype") == "fp8"; }
bool is_w4(const Params& L) { return is_w4_dtype(L.s("dtype")); }
DType act_dtype(const Params& L) { return layer_act_dtype(L); }

std::int64_t K_of(const Params& p) { return p.i("topk") + p.i("shared"); }
// The local experts' count: the layer holds only their weights and offsets.
std::int64_t El_of(const Params& p) { return layer_experts(p).count(); }

// The intermediates between stages, sized for the worst-case row count; the decode path's tile maps
// (the front writes them) for 16-row tiles, and a folding down's counters for its narrowest N-tiles.
std::vector<TensorSpec> intermediates(const Params& L) {
  const std::int64_t T = L.i("tokens"), K = K_of(L), El = El_of(L), R = layer_max_rows(L);
  const std::int64_t D = L.i("hidden"), I = L.i("intermediate");
  const std::int64_t map = static_cast<std::int64_t>(gmm_tile_map_bytes(R, 16, El) / 4);
  const DType xs = is_fp8(L) ? DType::e4m3 : act_dtype(L), y = is_fp8(L) ? DType::bf16 : act_dtype(L);
  std::vector<TensorSpec> v = {{"weights", DType::f32, {T, K}, ""}, {"ids", DType::i32, {T, K}, ""},
                               {"offsets", DType::i32, {El + 1}, ""}, {"src", DType::i32, {R}, ""},
                               {"dst", DType::i32, {T * K}, ""},      {"x_sorted", xs, {R, D}, ""},
                               {"h", xs, {R, I}, ""},                 {"y_sorted", y, {R, D}, ""}};
  if (is_fp8(L)) v.insert(v.end(), {{"x_scale", DType::f32, {R, D / 128}, ""}, {"h_scale", DType::f32, {R, I / 128}, ""}});
  v.insert(v.end(), {{"up_map", DType::i32, {map}, ""}, {"down_map", DType::i32, {map}, ""},
                     {"down_done", DType::i32, {(D + 15) / 16}, ""}});
  return v;
}

constexpr std::size_t kAlign = 256;
std::size_t round_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// The device a call runs on, by what identifies it cheaply: the cache below is keyed by it,
// so a call does not query device properties (or read /proc/cpuinfo) each time.
int ordinal_of(Backend b) { return b == Backend::cuda ? cuda_current_device() : 0; }

// The layer's inputs and its intermediates, carved from the workspace at `base` (null when
// planning: only shapes count then); `used` gets the bytes they take.
RefMap layer_refs(const Params& L, const RefMap& in, std::byte* base, std::size_t* used) {
  RefMap all = in;
  std::size_t at = 0;
  for (const TensorSpec& s : intermediates(L)) {
    TensorRef r{base ? base + at : nullptr, s.dtype, s.shape};
    at += round_up(r.nbytes());
    all[s.name] = r;
  }
  *used = at;
  return all;
}

RefMap stage_inputs(const Stage& s, const RefMap& all) {
  RefMap si;
  for (auto& spec : family(s.family).input_specs(s.problem)) si[spec.name] = need(all, spec.name);
  return si;
}

}  // namespace

std::shared_ptr<const LayerPlan> plan_layer(Backend b, const Params& L, std::shared_ptr<const ResolvedLayer> resolved,
                                            const RefMap& in) {
  std::vector<std::shared_ptr<const LaunchPlan>> stages;
  std::size_t used = 0;
  const RefMap all = layer_refs(L, in, nullptr, &used);
  bool waits = false;
  for (std::size_t i = 0; i < resolved->stages.size(); ++i) {
    const Stage& s = resolved->stages[i];
    const BackendImpl& impl = family(s.family).need_backend(b);
    stages.push_back(impl.plan ? impl.plan(s.problem, resolved->choices[i].config, stage_inputs(s, all)) : nullptr);
    waits = waits || waits_on_host(stages.back().get());
  }
  // A stage that waits on the host (a library peer) makes the layer's call wait too.
  struct WaitingLayerPlan : LayerPlan, HostWait {};
  std::shared_ptr<LayerPlan> p = waits ? std::make_shared<WaitingLayerPlan>() : std::make_shared<LayerPlan>();
  p->stages = std::move(stages);
  p->kernels = kUnknownKernels;
  p->resolved = std::move(resolved);
  return p;
}

namespace {

// Runs the five stages through their families' backends, intermediates carved from the workspace.
// With a LayerPlan a call only launches: no table, device or launch-shape question is asked.
void run_layer(Backend b, const Params& L, const Params& config, const RefMap& in, const RefMap& out,
               const LaunchContext& ctx) {
  const auto* planned = dynamic_cast<const LayerPlan*>(ctx.plan);
  const auto resolved = planned ? planned->resolved
                                : cached_resolved_layer(b, L, config, ordinal_of(b), b == Backend::cpu ? ctx.threads : 0);
  std::size_t used = 0;
  RefMap all = layer_refs(L, in, static_cast<std::byte*>(ctx.workspace), &used);
  LaunchContext stage_ctx = ctx;
  stage_ctx.workspace = static_cast<std::byte*>(ctx.workspace) + used;
  stage_ctx.workspace_bytes = ctx.workspace_bytes > used ? ctx.workspace_bytes - used : 0;
  auto pick = [](const RefMap& m, std::initializer_list<const char*> names) {
    RefMap r;
    for (const char* n : names) r[n] = need(m, n);
    return r;
  };
  all["out"] = need(out, "out");
  // Off when the caller (moe::Kernel's option, a timer) turned it off, or this config does.
  const ProgrammaticLaunch pdl(programmatic_launch() && config.b("pdl"));
  // path=decode: one front kernel in place of the router and dispatch stages.
  const bool decode = decode_path(config), fold = fold_combine(config);
  // The decode front writes the tile maps of the gmm stages whose kernels walk one.
  std::array<int, 2> map_bm{0, 0};
  if (decode) {
    RefMap front_in = pick(all, {"logits", "x"}), front_out = pick(all, {"weights", "ids", "offsets", "src", "dst", "x_sorted"});
    if (L.b("bias")) front_in["bias"] = need(all, "bias");
    if (is_fp8(L)) front_out["x_scale"] = need(all, "x_scale");
    for (int j = 0; j < 2; ++j) map_bm[j] = gmm_tile_map_block_m(resolved->choices[2 + j].config);
    front_out["up_map"] = all.at("up_map"), front_out["down_map"] = all.at("down_map");
    if (fold) front_out["fold_done"] = all.at("down_done");
    for (int j = 0; j < l2_prefetch(config); ++j) front_in[j ? "w2" : "w13"] = need(all, j ? "w2" : "w13");
    run_front(b, L, config, front_in, front_out, stage_ctx, map_bm);
  }
  // A folding down writes out itself: combine, the last stage, is not run.
  for (std::size_t i = decode ? 2 : 0; i < resolved->stages.size() - (fold ? 1 : 0); ++i) {
    const Stage& s = resolved->stages[i];
    const FamilyDesc& f = family(s.family);
    RefMap si = stage_inputs(s, all);
    if (const int j = s.name == "gmm_up" ? 0 : s.name == "gmm_down" ? 1 : -1; j >= 0 && map_bm[j] > 0)
      // Down's map is two kernels old when down launches: down may read it before its wait.
      si[j == 0 ? "tile_map" : "early_tile_map"] = need(all, j == 0 ? "up_map" : "down_map");
    RefMap so;
    if (s.name == "router") so = pick(all, {"weights", "ids"});
    else if (s.name == "dispatch" && is_fp8(L)) so = pick(all, {"offsets", "src", "dst", "x_sorted", "x_scale"});
    else if (s.name == "dispatch") so = pick(all, {"offsets", "src", "dst", "x_sorted"});
    else if (s.name == "gmm_up" && is_fp8(L)) so = pick(all, {"h", "h_scale"});
    else if (s.name == "gmm_up") so = pick(all, {"h"});
    else if (s.name == "gmm_down") so = pick(all, {"y_sorted"});
    else so = pick(all, {"out"});
    if (s.name == "gmm_down" && fold)
      si["fold_dst"] = all.at("dst"), si["fold_weights"] = all.at("weights"), si["fold_done"] = all.at("down_done"),
      so["fold_out"] = all.at("out");
    stage_ctx.plan = planned ? planned->stages[i].get() : nullptr;
    f.need_backend(b).run(s.problem, resolved->choices[i].config, si, so, stage_ctx);
  }
}

Params auto_config(std::int64_t pdl = 1, const char* path = "stages", std::int64_t fold = 0, std::int64_t l2 = 0) {
  Params c;
  for (const char* k : kStageKeys) c.set(k, std::string("auto"));
  c.set("pdl", pdl).set("path", std::string(path)).set("front_ctas", std::int64_t{0}).set("fold_combine", fold);
  return c.set("l2_prefetch", l2);
}

BackendImpl layer_backend(Backend b) {
  BackendImpl impl;
  impl.backend = b;
  impl.config_params = layer_config_params();
  // The layer is not searched as a whole: each stage is tuned as its own family and the
  // layer is timed with the stages' chosen configs.
  // On a GPU the layer is timed with and without programmatic dependent launch, through the
  // stages and, where the decode front can run the problem, through it.
  impl.space = [b](const Params& L, const DeviceInfo& dev, bool) {
    std::vector<Params> v = {auto_config(1)};
    if (b == Backend::cuda) v.push_back(auto_config(0));
    // The decode path with and without the fold (invalid, with the reason, where down cannot fold)
    // and each choice of the front's L2 prefetch; the emulator, which times nothing, runs the
    // prefetch once, with the fold.
    if (b == Backend::cpu || !front_invalid_reason(b, L, dev).empty()) return v;
    for (std::int64_t fold = 0; fold < 2; ++fold)
      for (std::int64_t l2 = 0; l2 <= (b == Backend::cuda ? 2 : 2 * fold); l2 += b == Backend::cuda ? 1 : 2)
        for (std::int64_t pdl = 1; pdl >= (b == Backend::cuda ? 0 : 1); --pdl) v.push_back(auto_config(pdl, "decode", fold, l2));
    return v;
  };
  impl.default_config = [](const Params&, const DeviceInfo&) { return auto_config(); };
  impl.invalid_reason = [b](const Params& L, const Params& c, const DeviceInfo& dev) -> std::string {
    // Explicit stage texts are parsed and checked. "auto" is valid by construction (runtime
    // dispatch only returns valid configs), so no table is read here: with no dirs it resolves
    // quietly to the default, and checking a config prints no warning about a missing table.
    try {
      const bool decode = decode_path(c);
      if (std::string why = decode ? front_invalid_reason(b, L, dev) : ""; !why.empty()) return why;
      if (c.has("fold_combine") && c.i("fold_combine") == 1 && !decode)
        return "fold_combine=1 folds combine into the decode path's gmm down: use path=decode";
      if (c.has("l2_prefetch") && c.i("l2_prefetch") > 0 && !decode)
        return "l2_prefetch sends the weights toward L2 from the decode path's front kernel: use path=decode";
      const ResolvedLayer r = resolve_layer(b, L, c, dev, {}, true);
      if (std::string why = fold_combine(c) ? gmm_fold_combine_invalid(r.stages[3].problem, r.choices[3].config) : "";
          !why.empty())
        return "fold_combine=1: stage gmm_down: " + why;
      // A stage's default may be a config its kernels cannot run for this problem (the cuda gmm
      // kernels and gpt-oss's expert function): the layer is invalid for the stage's reason.
      for (std::size_t i = decode ? 2 : 0; i < r.stages.size(); ++i) {
        const BackendImpl& si = family(r.stages[i].family).need_backend(b);
        if (!si.invalid_reason) continue;
        if (std::string why = si.invalid_reason(r.stages[i].problem, r.choices[i].config, dev); !why.empty())
          return "stage " + r.stages[i].name + ": " + why;
      }
    } catch (const Error& e) {
      return e.what();
    }
    return {};
  };
  impl.workspace_bytes = [b](const Params& L, const Params& c) {
    std::size_t n = 0;
    for (const TensorSpec& s : intermediates(L)) n += round_up(static_cast<std::size_t>(numel(s.shape)) * dtype_size(s.dtype));
    return n + cached_resolved_layer(b, L, c, ordinal_of(b), 0)->stage_workspace;
  };
  impl.run = [b](const Params& L, const Params& c, const RefMap& in, const RefMap& out, const LaunchContext& ctx) {
    run_layer(b, L, c, in, out, ctx);
  };
  if (b == Backend::emu) {
    impl.emu_seconds = [](const Params& L) {
      double s = 0;
      for (const Stage& st : layer_stages(L)) s += emu_seconds(family(st.family), st.problem);
      return s;
    };
    // A stage whose main kernel is played on the host (gmm's CUTLASS GEMM) says so for the layer.
    impl.not_emulated = [](const Params& L, const Params& c) -> std::string {
      const auto r = cached_resolved_layer(Backend::emu, L, c, 0, 0);
      for (std::size_t i = 0; i < r->stages.size(); ++i) {
        const BackendImpl& si = family(r->stages[i].family).need_backend(Backend::emu);
        if (!si.not_emulated) continue;
        if (std::string why = si.not_emulated(r->stages[i].problem, r->choices[i].config); !why.empty())
          return "stage " + r->stages[i].name + ": " + why;
      }
      return {};
    };
  }
  impl.plan = [b](const Params& L, const Params& c, const RefMap& in) -> std::shared_ptr<const LaunchPlan> {
    return plan_layer(b, L, cached_resolved_layer(b, L, c, ordinal_of(b), 0), in);
  };
  impl.pin_config = [b](const Params& L, const Params& c, const DeviceInfo& dev, const std::vector<std::string>& dirs,
                        bool quiet) {
    const ResolvedLayer r = resolve_layer(b, L, c, dev, dirs, quiet);
    Params pinned = c;
    for (std::size_t i = 0; i < r.stages.size(); ++i) pinned.set(r.stages[i].name, stage_config_text(r.choices[i].config));
    return pinned;
  };
  return impl;
}

FamilyDesc make_layer() {
  FamilyDesc f;
  f.name = "moe-layer";
  f.summary = "the whole layer: router, dispatch, gmm up, gmm down, combine, each stage with its own config";
  f.problem_params = {pp::tokens(),      pp::dtype("bf16", {"bf16", "f16", "fp8", "mxfp4", "int4"}), pp::experts(), pp::topk(),
                      pp::shared(),      pp::groups(),  pp::topk_group(), pp::group_score(), pp::scoring(),
                      pp::renormalize(), pp::rsf(),     pp::bias(),       pp::hidden(),      pp::intermediate(),
                      pp::align(),       pp::scale_fmt(),    pp::expert_begin(), pp::expert_end(),
                      pp::w4_group(),    pp::zero_point()};
  for (ParamSpec& p : pp::expert_fn()) f.problem_params.push_back(std::move(p));
  // The stages' own rules. gmm's include the host memory for its activations, which the layer
  // does not hold on the host (its footprint counts them where it runs): gmm is asked at one
  // token, where what is left to check is its weights.
  f.check_problem = [](const Params& L) {
    for (const Stage& s : layer_stages(L))
      if (family(s.family).check_problem)
        family(s.family).check_problem(s.family == "gmm" ? Params(s.problem).set("tokens", std::int64_t{1}) : s.problem);
  };
  // The layer's own inputs and output on the host (the reference follows sampled tokens through
  // the stages); every stage's intermediate at once wherever the layer runs.
  f.footprint = [](const Params& L) {
    Footprint fp;
    for (const TensorSpec& t : family("moe-layer").input_specs(L))
      fp.inputs.push_back({t.name, static_cast<double>(numel(t.shape)) * dtype_size(t.dtype)});
    fp.outputs = static_cast<double>(L.i("tokens")) * L.i("hidden") * dtype_size(act_dtype(L));
    for (const TensorSpec& t : intermediates(L)) fp.between += static_cast<double>(numel(t.shape)) * dtype_size(t.dtype);
    return fp;
  };
  f.input_specs = [](const Params& L) {
    const std::int64_t T = L.i("tokens"), E = L.i("experts"), El = El_of(L), D = L.i("hidden"), I = L.i("intermediate");
    const DType act = act_dtype(L), wt = is_fp8(L) ? DType::e4m3 : act;
    std::vector<TensorSpec> v = {{"logits", act, {T, E}, "router logits"}, {"x", act, {T, D}, "activations"}};
    if (is_w4(L)) {
      // gmm's own packed tensors (codes, scales, zero points), as each stage takes them.
      const auto stages = layer_stages(L);
      for (std::size_t i : {std::size_t{2}, std::size_t{3}})
        for (const TensorSpec& t : family("gmm").input_specs(stages[i].problem))
          if (t.name.rfind(i == 2 ? "w13" : "w2", 0) == 0) v.push_back(t);
    } else {
      v.push_back({"w13", wt, {El, 2 * I, D}, "gate and up weights of the local experts (rows as w13_layout says)"});
      v.push_back({"w2", wt, {El, D, I}, "down weights of the local experts"});
    }
    if (L.b("bias13")) v.push_back({"bias13", act, {El, 2 * I}, "gate|up bias of the local experts, in w13's row order"});
    if (L.b("bias2")) v.push_back({"bias2", act, {El, D}, "down bias of the local experts"});
    if (is_fp8(L)) {
      v.push_back({"w13_scale", DType::f32, {El, 2 * I / 128, D / 128}, "fp32 scale of each 128x128 block of w13"});
      v.push_back({"w2_scale", DType::f32, {El, D / 128, I / 128}, "fp32 scale of each 128x128 block of w2"});
    }
    if (L.b("bias")) v.push_back({"bias", DType::f32, {E}, "e_score_correction_bias"});
    return v;
  };
  f.make_inputs = [](const Params& L, const InputOptions& opt, TensorMap& in) {
    // Each stage family makes its own kind of input, so the layer's inputs look like theirs.
    // Tensors move, never copy: kimi-k2's weights are 34 GB.
    Rng rng(opt.seed);
    const auto stages = layer_stages(L);
    using Names = std::vector<std::string>;
    // A family's make_inputs keeps what it is given: the given tensors are lent, and come back.
    auto lend = [&in](const Names& names) {
      TensorMap m;
      for (const std::string& k : names)
        if (in.count(k)) m[k] = std::move(in.at(k)), in.erase(k);
      return m;
    };
    auto take = [&in](TensorMap& from, const Names& names) {
      for (const std::string& k : names)
        if (from.count(k)) in[k] = std::move(from.at(k));
    };
    const Names router_in{"logits", "bias"};
    TensorMap r = lend(router_in);
    family("router").make_inputs(stages[0].problem, opt, r);
    take(r, router_in);
    // The gmm stages' weights depend on the seed and their shapes alone: asked for at one token,
    // gmm makes no activations the layer would throw away (17 GB of x_sorted at kimi-k2's 32k).
    InputOptions o2 = opt;
    o2.seed = opt.seed + 1;
    for (const auto& [i, names] : {std::pair<std::size_t, Names>{2, {"w13", "w13_scale", "w13_zero", "bias13"}},
                                   {3, {"w2", "w2_scale", "w2_zero", "bias2"}}}) {
      TensorMap w = lend(names);
      family("gmm").make_inputs(Params(stages[i].problem).set("tokens", std::int64_t{1}), o2, w);
      take(w, names);
    }
    if (!in.count("x")) in["x"] = random_tensor(act_dtype(L), {L.i("tokens"), L.i("hidden")}, rng);
  };
  f.output_specs = [](const Params& L, const TensorMap&) {
    return std::vector<TensorSpec>{{"out", act_dtype(L), {L.i("tokens"), L.i("hidden")}, "layer output"}};
  };
  f.reference = layer_reference;
  f.validate = [](const Params& L, const TensorMap&, const TensorMap& got, const TensorMap& ref) {
    return layer_validate(L, got, ref);
  };
  f.cost = [](const Params& L, const TensorMap& in) {
    Cost c;
    const double T = L.i("tokens"), D = L.i("hidden"), I = L.i("intermediate");
    // Weight bytes per element: fp8's codes and block scales; 4-bit: half a byte, a scale per
    // group (e8m0: 1 byte; int4: bf16) and int4's half-byte zero points.
    const double es = dtype_size(act_dtype(L));
    const double g = L.s("dtype") == "int4" ? static_cast<double>(L.i("group")) : 32.0;
    const double ws = is_fp8(L) ? 1.0 + 4.0 / (128 * 128)
                      : is_w4(L) ? 0.5 + (L.s("dtype") == "int4" ? 2.0 + (L.b("zero_point") ? 0.5 : 0.0) : 1.0) / g
                                 : es;
    // Weight bytes of the local experts the tokens actually reach: routing decides it, so count
    // it; the flops are those of the slots routed to a local expert.
    TensorMap r;
    r["logits"] = Tensor::borrow(in.at("logits"));
    if (in.count("bias")) r["bias"] = Tensor::borrow(in.at("bias"));
    const auto stages = layer_stages(L);
    TensorMap ro = allocate(family("router").output_specs(stages[0].problem, r));
    family("router").reference(stages[0].problem, r, ro);
    std::set<std::int32_t> active;
    const Tensor& ids = ro.at("ids");
    const ExpertRange local = layer_experts(L);
    double slots = 0;
    for (std::int64_t i = 0; i < ids.numel(); ++i) {
      const std::int32_t id = ids.data<std::int32_t>()[i];
      if (id < local.begin || id >= local.end) continue;
      active.insert(id);
      ++slots;
    }
    c.bytes = active.size() * 3.0 * I * D * ws + 2.0 * T * D * es + in.at("logits").nbytes();
    c.flops = 2.0 * slots * D * 3.0 * I;
    return c;
  };
  f.estimate = [](const Params& L) {
    Cost c;
    for (const Stage& s : layer_stages(L)) {
      const Cost st = family(s.family).estimate(s.problem);
      c.bytes += st.bytes;
      c.flops += st.flops;
    }
    return c;
  };
  f.backends.push_back(layer_backend(Backend::cpu));
  if (router_family().backend(Backend::cuda) && dispatch_family().backend(Backend::cuda) &&
      gmm_family().backend(Backend::cuda) && combine_family().backend(Backend::cuda))
    f.backends.push_back(layer_backend(Backend::cuda));
  if (router_family().backend(Backend::emu) && dispatch_family().backend(Backend::emu) &&
      gmm_family().backend(Backend::emu) && combine_family().backend(Backend::emu))
    f.backends.push_back(layer_backend(Backend::emu));
  return f;
}

}  // namespace

const FamilyDesc& layer_family() {
  static const FamilyDesc d = make_layer();
  return d;
}

}  // namespace moe
