#pragma once
// A session as a document: JSON (everything, steps as the CLI's --json prints them) or CSV (one row per step,
// or one row per draft-tree node with its step's context) for spreadsheets and notebooks.
#include <ostream>

#include "sessions/reader.h"

namespace specscope::sessions {

void export_json(SessionReader& reader, int64_t session_id, std::ostream& out);
enum class CsvTable { Steps, Nodes };
void export_csv(SessionReader& reader, int64_t session_id, CsvTable table, std::ostream& out);

}  // namespace specscope::sessions
