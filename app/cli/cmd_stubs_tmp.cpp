// Temporary: commands not yet written. Removed as each command lands.
#include "app/cli/commands.h"
#include "engine/util/error.h"
namespace specscope::cli {
int cmd_info(Args&) { throw InputError("info", "not yet available"); }
int cmd_tokenize(Args&) { throw InputError("tokenize", "not yet available"); }
int cmd_detokenize(Args&) { throw InputError("detokenize", "not yet available"); }
int cmd_run(Args&) { throw InputError("run", "not yet available"); }
int cmd_bench(Args&) { throw InputError("bench", "not yet available"); }
}  // namespace specscope::cli
