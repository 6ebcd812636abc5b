#include "tuner/store/side_by_side.hpp"

namespace moe::tuner {

namespace {

double median_of(const json& r) {
  const json& s = r.value("stats", json::object());
  return s.is_object() && s.value("median_us", json()).is_number() ? s["median_us"].get<double>() : -1;
}

bool timed_ok(const json& r) { return r.value("status", "") == "ok" && median_of(r) > 0; }

json brief(const json& r) {
  json b{{"config", r.value("config", json::object())}, {"config_key", r.value("config_key", "")},
         {"median_us", median_of(r)}};
  if (r.contains("resolved_config")) b["resolved_config"] = r["resolved_config"];
  return b;
}

}  // namespace

bool runtime_can_call(const json& record) {
  const std::string b = record.value("backend", "");
  return b == "cpu" || b == "cuda";
}

json side_by_side(const std::vector<const json*>& records) {
  const json *ours = nullptr, *peer = nullptr;
  for (const json* r : records) {
    if (!timed_ok(*r)) continue;
    const json*& best = r->value("peer", "").empty() ? ours : peer;
    if (!best || median_of(*r) < median_of(*best)) best = r;
  }
  json s{{"ours", ours ? brief(*ours) : json(nullptr)}, {"peer", nullptr}, {"peer_over_ours", nullptr}};
  if (peer) {
    json p = brief(*peer);
    p["name"] = peer->value("peer", "");
    p["backend"] = peer->value("backend", "");
    s["peer"] = std::move(p);
  }
  if (!peer) {
    s["note"] = kNoPeerMeasured;
  } else if (!ours) {
    s["note"] = "none of ours measured";
  } else if (ours->value("timer", "") != peer->value("timer", "")) {
    // Times of two timers are no ratio: the one would read faster for the timer alone.
    s["note"] = "ours and the peer were timed by different timers (" + ours->value("timer", "") + ", " +
                peer->value("timer", "") + ")";
  } else {
    s["peer_over_ours"] = median_of(*peer) / median_of(*ours);
  }
  return s;
}

}  // namespace moe::tuner
