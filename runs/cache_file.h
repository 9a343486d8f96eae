#pragma once
// Files of the run library's cache ($XDG_CACHE_HOME/specscope: step-cost curves, tree choices, derived tree files),
// written whole or not at all. Two SpecScope processes (the app and the CLI, or tests under ctest -j) may derive the
// same file at the same moment, and a reader must never see half of one: a Medusa tree read while another process
// was writing it failed a race with "invalid JSON ... unexpected end of input".
#include <filesystem>
#include <string>

namespace specscope::runs {

// Writes `text` to a temporary file beside `file` and renames it over `file` (atomic on POSIX), creating the folder
// first. False, with nothing left behind, when any of it fails.
bool write_cache_file(const std::filesystem::path& file, const std::string& text);

// What a cached calibration saw of the model files at `path` (a folder's regular files, not recursive, or the file
// itself): each one's name, size and modification time, as a build system stamps its inputs; empty for an empty or
// missing path. Cheap where hashing a drafter's weights is not, and it changes when a head or drafter is retrained in
// place (same folder, same tensor names and shapes), so a tree choice calibrated on the old weights is not reused.
std::string files_stamp(const std::string& path);

}  // namespace specscope::runs
