// specscope-cli tokenize / detokenize.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/cli/commands.h"
#include "engine/model/model.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/error.h"

namespace specscope::cli {

int cmd_tokenize(Args& args) {
  std::string path = model_path(args);
  auto text = args.get("--text");
  bool json = args.has("--json");
  bool no_bos = args.has("--no-bos");
  args.finish();
  if (!text) throw InputError("--text", "required");
  auto model = Model::load(path);
  if (find_invalid_utf8(*text) != std::string::npos) throw InputError("--text", "invalid UTF-8");
  auto ids = model->tokenizer().encode(*text, !no_bos);
  if (json) {
    std::printf("%s\n", nlohmann::json(ids).dump().c_str());
  } else {
    for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%d", i ? " " : "", ids[i]);
    std::printf("\n");
  }
  return 0;
}

int cmd_detokenize(Args& args) {
  std::string path = model_path(args);
  auto ids_arg = args.get("--ids");
  bool skip = args.has("--skip-special");
  args.finish();
  if (!ids_arg) throw InputError("--ids", "required (comma-separated token ids)");
  auto model = Model::load(path);
  std::vector<int32_t> ids;
  std::stringstream ss(*ids_arg);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end || v < 0 || v >= model->tokenizer().vocab_size())
      throw InputError("--ids", "'" + item + "' is not a token id of this model");
    ids.push_back(int32_t(v));
  }
  std::printf("%s\n", model->tokenizer().decode(ids, skip).c_str());
  return 0;
}

}  // namespace specscope::cli
