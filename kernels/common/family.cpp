#include "moe/family.hpp"

#include "common/view_checks.hpp"

#include "combine/family.hpp"
#include "dispatch/family.hpp"
#include "gmm/family.hpp"
#include "layer/family.hpp"
#include "moe/error.hpp"
#include "router/family.hpp"

namespace moe {

std::string_view backend_name(Backend b) {
  switch (b) {
    case Backend::cuda: return "cuda";
    case Backend::emu: return "emu";
    default: return "cpu";
  }
}

Backend parse_backend(std::string_view s) {
  if (s == "cpu") return Backend::cpu;
  if (s == "cuda" || s == "gpu") return Backend::cuda;
  if (s == "emu") return Backend::emu;
  if (s == "vllm" || s == "sglang")
    throw Error("--backend " + std::string(s) + " is the engine's Triton fused_moe kernel, which `moebench sweep gmm --backend " +
                std::string(s) + "` tunes; this command takes cpu, cuda or emu");
  throw Error("unknown backend '" + std::string(s) + "': use cpu, cuda or emu (and, for `moebench sweep gmm`, vllm or sglang)");
}

const std::vector<const FamilyDesc*>& families() {
  static const std::vector<const FamilyDesc*> all = {&router_family(), &dispatch_family(), &gmm_family(),
                                                     &combine_family(), &layer_family()};
  return all;
}

const FamilyDesc& family(const std::string& name) {
  std::string names;
  for (auto* f : families()) {
    if (f->name == name) return *f;
    names += (names.empty() ? "" : ", ") + f->name;
  }
  throw Error("unknown kernel family '" + name + "': use one of " + names);
}

std::string peer_of(const BackendImpl& impl, const Params& config) { return impl.peer ? impl.peer(config) : std::string(); }

const BackendImpl* FamilyDesc::backend(Backend b) const {
  for (auto& impl : backends)
    if (impl.backend == b) return &impl;
  return nullptr;
}

const BackendImpl& FamilyDesc::need_backend(Backend b) const {
  if (auto* p = backend(b)) return *p;
  throw Error("family '" + name + "' has no " + std::string(backend_name(b)) + " backend in this build");
}

const ParamSpec* FamilyDesc::problem_param(const std::string& n) const {
  for (auto& p : problem_params)
    if (p.name == n) return &p;
  return nullptr;
}

std::string Validation::summary() const {
  std::string r = ok ? "PASS" : "FAIL";
  for (auto& c : checks) {
    r += "  " + c.tensor + (c.ok ? ":ok" : ":FAIL");
    if (c.mismatches) r += " mismatches=" + std::to_string(c.mismatches);
    if (c.nans) r += " nan=" + std::to_string(c.nans);
    if (c.unwritten) r += " unwritten=" + std::to_string(c.unwritten);
    if (c.rel_l2 > 0) {
      char buf[64];
      std::snprintf(buf, sizeof buf, " relL2=%.2e", c.rel_l2);
      r += buf;
    }
    if (!c.ok && !c.detail.empty()) r += " (" + c.detail + ")";
  }
  return r;
}

void check_views(const std::string& fam, const std::vector<TensorSpec>& specs, const RefMap& m, const std::string& what) {
  for (auto& s : specs) {
    auto it = m.find(s.name);
    if (it == m.end()) throw Error(fam + ": " + what + " '" + s.name + "' is missing");
    const TensorRef& t = it->second;
    if (t.dtype != s.dtype)
      throw Error(fam + ": " + what + " '" + s.name + "' has dtype " + std::string(dtype_name(t.dtype)) +
                  ", expected " + std::string(dtype_name(s.dtype)));
    bool ok = t.shape.size() == s.shape.size();
    for (std::size_t i = 0; ok && i < s.shape.size(); ++i) ok = s.shape[i] < 0 || s.shape[i] == t.shape[i];
    if (!ok)
      throw Error(fam + ": " + what + " '" + s.name + "' has shape " + shape_str(t.shape) + ", expected " +
                  shape_str(s.shape) + " (-1: any)");
  }
}

void check_tensors(const std::string& fam, const std::vector<TensorSpec>& specs, const TensorMap& m,
                   const std::string& what) {
  RefMap views;
  for (auto& [name, t] : m) views.emplace(name, t.ref());
  check_views(fam, specs, views, what);
}

TensorMap allocate(const std::vector<TensorSpec>& specs) {
  TensorMap m;
  for (auto& s : specs) {
    for (auto d : s.shape)
      if (d < 0) throw Error("output '" + s.name + "' has an unresolved shape " + shape_str(s.shape));
    m.emplace(s.name, Tensor(s.dtype, s.shape));
  }
  return m;
}

Params fill_config(const BackendImpl& impl, const Params& problem, const Params& given, const DeviceInfo& dev,
                   const std::string& what) {
  Params full = given;
  // Unset keys come from the family's default for this problem, not from spec defaults.
  const Params def = impl.default_config(problem, dev);
  for (auto& [k, v] : def.values())
    if (!full.has(k)) full.set(k, v);
  full = complete(impl.config_params, full, what);
  if (!impl.invalid_reason) return full;
  const std::string why = impl.invalid_reason(problem, full, dev);
  if (why.empty()) return full;
  // The default may be of another variant than the keys given name (gmm cuda's default is
  // kernel=mma at decode: `kernel=wgmma` alone must not inherit mma's tile).
  if (impl.space && !given.values().empty()) {
    const Params named = complete(impl.config_params, given, what);
    auto agrees = [&](const Params& c) {
      for (auto& [k, v] : given.values())
        if (!c.has(k) || !(c.at(k) == named.at(k))) return false;
      return true;
    };
    for (bool wide : {false, true})
      for (const Params& c : impl.space(problem, dev, wide))
        if (agrees(c)) return c;
  }
  throw Error(what + " " + full.str() + " is invalid for this problem: " + why);
}

}  // namespace moe
