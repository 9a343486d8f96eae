#pragma once
// Helpers for the session-store tests: a fresh temporary folder, deterministic synthetic StepRecords (so a
// reader can check a step's content from its index alone), and raw file access.
#include <cstdint>
#include <filesystem>
#include <string>

#include "engine/methods/step_record.h"
#include "sessions/records.h"

namespace specscope::test {

// A new empty folder under the build's temporary area, removed by the caller if it likes.
std::filesystem::path fresh_dir(const std::string& name);
// A step whose every field is a function of (run_id, index); node count between 0 and max_nodes, NaNs included.
StepRecord synthetic_step(int64_t run_id, int64_t index, int max_nodes = 40);
std::string synthetic_piece(int64_t run_id, int64_t index);
sessions::SessionMeta synthetic_session();
sessions::RunMeta synthetic_run(const std::string& method = "sps");
std::string read_bytes(const std::filesystem::path& p);
void write_bytes(const std::filesystem::path& p, const std::string& bytes);

}  // namespace specscope::test
