// moe::Kernel on the moe-layer: its stages are pinned from the tables in the Kernel's own
// table folders, once per token key, and a call runs exactly those stage configs.
#include <gtest/gtest.h>

#include <string>

#include "layer/stages.hpp"
#include "moe/cuda_device.hpp"
#include "moe/moe.hpp"
#include "support/stage_tables.hpp"
#include "support/temp_dirs.hpp"
#include "tuner/measure/harness.hpp"

namespace {

using namespace moe;

Params layer_problem() {
  return Params{{"dtype", std::string("bf16")}, {"experts", std::int64_t{8}},      {"topk", std::int64_t{2}},
                {"shared", std::int64_t{0}},    {"hidden", std::int64_t{64}},      {"intermediate", std::int64_t{32}},
                {"align", std::int64_t{4}}};
}

// A cpu table for the layer's combine stage with one entry at `tokens`.
void write_combine_table(const std::filesystem::path& dir, std::int64_t tokens, const Params& config) {
  Params L = layer_problem();
  L.set("tokens", tokens);
  L = complete(family("moe-layer").problem_params, L, "layer");
  for (const Stage& s : layer_stages(L))
    if (s.name == "combine") moe::testing::write_stage_table(dir, s, tokens, config);
}

TEST(RuntimeKernelLayer, StagesArePinnedFromTheKernelsOwnTables) {
  const auto dir = moe::testing::fresh_temp_dir("kernel-layer");
  const Params tuned{{"d_split", std::int64_t{2}}, {"tokens_per_task", std::int64_t{8}}};
  write_combine_table(dir, 16, tuned);
  KernelOptions o;
  o.backend = Backend::cpu;
  o.table_dirs = std::vector<std::string>{dir.string()};
  o.quiet = true;
  const Kernel k("moe-layer", layer_problem(), o);
  EXPECT_EQ(k.config(16).s("combine"), "d_split=2;tokens_per_task=8") << k.describe(16);
  EXPECT_NE(k.config(16).s("router"), "auto");  // every stage named, none left to a call

  // Elsewhere (an empty folder) the same layer gets the stage defaults, not that table.
  KernelOptions none = o;
  none.table_dirs = std::vector<std::string>{(dir / "empty").string()};
  const Kernel d("moe-layer", layer_problem(), none);
  EXPECT_NE(d.config(16).s("combine"), "d_split=2;tokens_per_task=8");

  // A call runs the pinned configs and matches the reference.
  Params p = layer_problem();
  p.set("tokens", std::int64_t{16});
  InputOptions opt;
  opt.seed = 3;
  const auto prep = tuner::prepare(family("moe-layer"), p, opt);
  TensorMap out = allocate(prep.output_specs);
  for (auto& [n, t] : out) poison_host(t.ref());
  RefMap in_refs, out_refs;
  for (auto& [n, t] : prep.inputs) in_refs[n] = t.ref();
  for (auto& [n, t] : out) out_refs[n] = t.ref();
  std::vector<std::byte> ws(k.workspace_bytes(16));
  k.run(16, in_refs, out_refs, nullptr, ws.data(), ws.size());
  const Validation v = family("moe-layer").validate(prep.problem, prep.inputs, out, prep.reference);
  EXPECT_TRUE(v.ok) << v.summary();
  std::filesystem::remove_all(dir);
}

// moe_layer_fp8: the fp8 layer through the public API on the cpu backend, stage configs pinned
// (defaults here), against the fp8 reference chain.
TEST(RuntimeKernelLayer, Fp8LayerThroughThePublicEntryPoint) {
  Params L = layer_problem();
  L.set("dtype", std::string("fp8")).set("hidden", std::int64_t{128}).set("intermediate", std::int64_t{256});
  L.set("scale_fmt", std::string("ue8m0"));
  KernelOptions o;
  o.backend = Backend::cpu;
  o.table_dirs = std::vector<std::string>{moe::testing::fresh_temp_dir("kernel-layer-fp8").string()};
  o.quiet = true;
  const Kernel k("moe-layer", L, o);
  Params p = L;
  p.set("tokens", std::int64_t{11});
  InputOptions opt;
  opt.seed = 5;
  const auto prep = tuner::prepare(family("moe-layer"), p, opt);
  TensorMap out = allocate(prep.output_specs);
  poison_host(out.at("out").ref());
  std::vector<std::byte> ws(k.workspace_bytes(11));
  auto in = [&](const char* n) { return prep.inputs.at(n).ref(); };
  moe_layer_fp8(k, in("logits"), nullptr, in("x"), in("w13"), in("w13_scale"), in("w2"), in("w2_scale"),
                out.at("out").ref(), nullptr, ws.data(), ws.size());
  const Validation v = family("moe-layer").validate(prep.problem, prep.inputs, out, prep.reference);
  EXPECT_TRUE(v.ok) << v.summary();
}

}  // namespace
