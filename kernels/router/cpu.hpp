#pragma once
// The router's cpu backend: rows spread over worker threads, each row scored and selected
// independently. Config: rows_per_task (the smallest block of rows a worker takes) and
// select (the top-k algorithm: heap | partial_sort | iterative). Every config gives
// exactly the reference's ids and weights.
#include "moe/family.hpp"

namespace moe::router {

BackendImpl cpu_backend();

}  // namespace moe::router
