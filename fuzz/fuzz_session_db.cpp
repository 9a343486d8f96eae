// libFuzzer target: a session store file of arbitrary bytes (mutated from a real one) is opened, listed,
// read, exported and replayed through SessionReader. Every problem must surface as an InputError naming the
// file; any other exception, a crash, a hang or a sanitizer report is a bug. Seed: fuzz/corpus/session_db.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>

#include "engine/util/error.h"
#include "sessions/export.h"
#include "sessions/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/dev/shm/specscope-fuzz-" + std::to_string(getpid()) + ".db";
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path + suffix);
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  try {
    specscope::sessions::SessionReader reader(path);
    for (const auto& listing : reader.list()) {
      std::ostringstream sink;
      specscope::sessions::export_json(reader, listing.id, sink);
      specscope::sessions::export_csv(reader, listing.id, specscope::sessions::CsvTable::Nodes, sink);
      for (const auto& run : reader.session(listing.id).runs) {
        reader.timeline(run.id);
        if (run.step_count > 0) reader.step(run.id, run.step_count - 1);
      }
    }
  } catch (const specscope::InputError&) {
  }
  return 0;
}
