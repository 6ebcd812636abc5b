#pragma once
// What `--resume` takes from the journal of an earlier run, and what it cleans up after it.
#include <string>

#include "tuner/run/sweep_state.hpp"

namespace moe::tuner {

// Fills the resume caches from `old`. A candidate whose worker crashed or timed out (killed by
// the OOM killer, say) is measured again once when `retry_failed`: its new line carries
// "retry": true, and a line that already is a retry is kept as it is.
void load_resume_cache(SweepState& s, const JournalContents& old, bool retry_failed);

// Removes the temporary files (NAME.tmp.XXXXXXXXXXXX) that a run killed while writing its
// results left in `out_dir`; the caller holds the folder's lock, so no live run is writing them.
void remove_stale_temp_files(const std::string& out_dir);

}  // namespace moe::tuner
