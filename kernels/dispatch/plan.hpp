#pragma once
// The dispatch maps (offsets, src, dst) computed on the host with plain loops. This is the
// reference's definition, output_specs' row count, and how combine derives dst from ids.
#include <cstdint>
#include <vector>

#include "moe/tensor.hpp"

namespace moe {

struct DispatchPlan {
  std::vector<std::int32_t> offsets;  // [E_local + 1]
  std::vector<std::int32_t> src;      // [R]: slot f of each sorted row, -1 on padding
  std::vector<std::int32_t> dst;      // [slots]: row of slot f, -1 when dropped
  std::int64_t rows() const { return offsets.back(); }
};

// Which experts are kept: ids in [e0, e1), a sub-range of the id space [0, E_total).
struct ExpertRange {
  std::int64_t E_total = 0, e0 = 0, e1 = 0, A = 1;
  // Local index of an id, or -1 when the id is out of range or not local (the slot is dropped).
  std::int64_t local(std::int32_t id) const {
    return (id >= 0 && id < E_total && id >= e0 && id < e1) ? id - e0 : -1;
  }
};

DispatchPlan plan_dispatch(const std::int32_t* ids, std::int64_t slots, const ExpertRange& r);
// Only R, the rows of x_sorted, without building the maps.
std::int64_t dispatch_rows(const std::int32_t* ids, std::int64_t slots, const ExpertRange& r);

// Error when any id lies outside [0, E_total): how many, and the first one as [t,j] = v.
void check_ids_in_range(const Tensor& ids, std::int64_t E_total);

}  // namespace moe
