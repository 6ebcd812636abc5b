#pragma once
// A one-entry cpu config table for a layer stage's problem, in the layout runtime dispatch
// reads: tests of the layer's table lookups write what a sweep would have written.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "layer/stages.hpp"
#include "runtime/build_id.hpp"
#include "runtime/params_json.hpp"
#include "runtime/table.hpp"

namespace moe::testing {

inline void write_stage_table(const std::filesystem::path& dir, const Stage& stage, std::int64_t tokens,
                              const Params& config) {
  const std::string path = runtime::table_path(dir.string(), "cpu", stage.family, runtime::problem_key(stage.problem));
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  const nlohmann::json t = {{"schema", runtime::kTableSchema},
                            {"kernel", stage.family},
                            {"backend", "cpu"},
                            {"device", "cpu"},
                            {"build", {{"id", runtime::family_build_id(stage.family)}}},
                            {"entries", {{std::to_string(tokens), {{"config", runtime::params_to_json(config)}}}}}};
  std::ofstream(path) << t.dump(1);
}

}  // namespace moe::testing
