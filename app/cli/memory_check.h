#pragma once
// The CLI's memory check (engine/discovery/memory_estimate.h): before any model loads, the job's resident memory
// is estimated from the models' headers and compared with MemAvailable; a job that does not fit is refused with
// one line (InputError: exit code 2) instead of being killed by the kernel part-way.
//
// Why here and not in Model::load: only the job knows the context it will run at (--context), how many models it
// holds at once (a race keeps every target loaded, a draft model has its own KV cache sized by its target) and
// which backend holds the KV cache. Model::load sees one model at a time and no context.
#include <string>

#include "engine/model/backend.h"
#include "runs/job.h"

namespace specscope::cli {

void check_job_memory(const runs::Job& job);
// One model at the context `n_ctx` (0: its default), for commands that load a model themselves (bench).
void check_model_memory(const std::string& path, int n_ctx, Backend backend);

}  // namespace specscope::cli
