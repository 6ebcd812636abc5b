#pragma once
// The gmm problem as a typed struct: every backend, the reference and the input maker read
// the same numbers, parsed and checked once.
#include <cstdint>
#include <string>

#include "common/max_rows.hpp"
#include "moe/dtype.hpp"
#include "moe/params.hpp"

namespace moe {

// The weights' format: dense (dtype's own elements), or one of the 4-bit formats whose
// activations and outputs are bf16 (docs/w4.md).
enum class WeightFormat { dense, mxfp4, int4 };

struct GmmSpec {
  std::int64_t tokens = 0;
  DType dtype = DType::bf16;     // of the operands (e4m3 for fp8) and, but for fp8 down, of the output
  bool fp8 = false;               // dtype=fp8: e4m3 operands with block scales (DESIGN.md 1.6)
  bool ue8m0 = false;             // fp8: activation scales rounded up to powers of two
  WeightFormat wq = WeightFormat::dense;  // mxfp4/int4: 4-bit weights, dtype (bf16) the rest
  std::int64_t group = 0;         // 4-bit: K elements per weight scale (mxfp4: 32; int4: 32 or 128)
  bool zero_point = false;        // int4: a 4-bit zero point per group (else the code's offset is 8)
  std::int64_t experts = 0, topk = 0, shared = 0;
  std::int64_t hidden = 0;        // D
  std::int64_t intermediate = 0;  // I
  std::int64_t align = 1;         // A
  std::int64_t expert_begin = 0, expert_end = 0;  // resolved: never -1
  bool down = false;              // stage: false = up (w13, silu*up), true = down (w2)
  bool routed_weight = false;     // down only: multiply each row by row_weight
  // The expert function (docs/design.md, gmm). Parsed for either stage; each stage reads its own.
  bool swiglu_oai = false;        // up: gpt-oss's clamped SwiGLU, else silu(gate) * up
  double alpha = 1.702, limit = 7.0;
  bool interleaved = false;       // w13's gate and up rows alternate in blocks of w13_block
  std::int64_t w13_block = 1;
  bool bias13 = false, bias2 = false;

  // Throws an Error naming the bad parameter and what to do.
  static GmmSpec parse(const Params& problem);
  // Parses so far in this process: a planned call makes none (the tests read it).
  static std::uint64_t parses();

  std::int64_t e_total() const { return experts + shared; }
  std::int64_t e_local() const { return expert_end - expert_begin; }
  std::int64_t slots() const { return topk + shared; }  // output slots per token
  // The GEMM each expert runs: out[R, n_out] from act[R, k_dim] and weights [n_w, k_dim].
  std::int64_t k_dim() const { return down ? intermediate : hidden; }
  std::int64_t n_out() const { return down ? hidden : intermediate; }
  std::int64_t n_w() const { return down ? hidden : 2 * intermediate; }
  std::size_t elem_bytes() const { return dtype_size(dtype); }
  // fp8 down writes bf16 (rounded once); everything else writes the operands' dtype.
  DType out_dtype() const { return fp8 && down ? DType::bf16 : dtype; }
  // fp8: one fp32 scale per 128 K of an activation row, per 128x128 block of a weight.
  std::int64_t k_groups() const { return k_dim() / 128; }
  bool w4() const { return wq != WeightFormat::dense; }
  // 4-bit: weight scales per row of a weight matrix.
  std::int64_t w_groups() const { return w4() ? k_dim() / group : 0; }
  std::size_t weight_bytes_per_expert() const;
  // Most rows dispatch can produce (common/max_rows.hpp: the one bound every stage sizes by).
  std::int64_t max_rows() const { return max_dispatch_rows(tokens, slots(), e_local(), align); }
  // Rows an active local expert gets on average (routed experts; shared ones get every token).
  double avg_rows_per_expert() const;

  // This stage's bias (up: bias13 [E, 2I]; down: bias2 [E, D]), and whether the stage computes
  // exactly the split silu(gate)*up without biases, the one expert function every kernel has.
  bool biased() const { return down ? bias2 : bias13; }
  const char* bias_name() const { return down ? "bias2" : "bias13"; }
  bool plain_expert_fn() const { return down ? !bias2 : !swiglu_oai && !interleaved && !bias13; }
  // What this stage asks for beyond that ("activation=swiglu_oai, w13_layout=interleaved"), "" when plain.
  std::string expert_fn_str() const;
  // The w13 row (and bias13 entry) holding column c of the gate (part 0) or up (part 1) projection.
  std::int64_t w13_row(int part, std::int64_t c) const {
    return interleaved ? c / w13_block * 2 * w13_block + part * w13_block + c % w13_block : part * intermediate + c;
  }

  const char* act_name() const { return down ? "h" : "x_sorted"; }
  const char* weight_name() const { return down ? "w2" : "w13"; }
  const char* out_name() const { return down ? "y_sorted" : "h"; }
  const char* act_scale_name() const { return down ? "h_scale" : "x_scale"; }
  const char* weight_scale_name() const { return down ? "w2_scale" : "w13_scale"; }
  const char* weight_zero_name() const { return down ? "w2_zero" : "w13_zero"; }
  std::string describe() const;  // "stage=up experts=257 hidden=7168 intermediate=2048"
};

// Bytes of host memory the problem's inputs and outputs (and its reference) take, and the
// refusal when they would not fit: an Error telling the user to shard, never an OOM crash.
struct GmmMemory {
  double weights = 0, activations = 0, outputs = 0;
  double total() const { return weights + activations + outputs; }
};
GmmMemory gmm_host_memory(const GmmSpec& s, bool weights_given = false, bool acts_given = false);
// host_memory_limit() in bytes (moe/memory.hpp); 0 when nothing can be read (then nothing is refused).
double host_memory_available();
// Throws when `need` exceeds what the host can spare.
void check_host_memory(const GmmSpec& s, const GmmMemory& need);

}  // namespace moe
