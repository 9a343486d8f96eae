#include "engine/tokenizer/post_processor.h"

#include "engine/tokenizer/json_util.h"

namespace specscope::tok {

// A named namespace, not an anonymous one: the normalizers, pre-tokenizers, decoders and post-processors share
// kind names (Sequence, ByteLevel, Strip...), and a unity build (cmake/SpecScopeUnity.cmake) compiles them together.
namespace post_processors {

class Noop final : public PostProcessor {
 public:
  std::vector<int32_t> process(std::vector<int32_t> ids) const override { return ids; }
};

// Fixed tokens around the sequence (TemplateProcessing's "single" template, Roberta/Bert's cls/sep).
class Wrap final : public PostProcessor {
 public:
  Wrap(std::vector<int32_t> before, std::vector<int32_t> after) : before_(std::move(before)), after_(std::move(after)) {}
  std::vector<int32_t> process(std::vector<int32_t> ids) const override {
    std::vector<int32_t> out(before_);
    out.insert(out.end(), ids.begin(), ids.end());
    out.insert(out.end(), after_.begin(), after_.end());
    return out;
  }
  std::vector<int32_t> prefix_ids() const override { return before_; }
  std::vector<int32_t> suffix_ids() const override { return after_; }

 private:
  std::vector<int32_t> before_, after_;
};

class Sequence final : public PostProcessor {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PostProcessor>> parts) : parts_(std::move(parts)) {}
  std::vector<int32_t> process(std::vector<int32_t> ids) const override {
    for (const auto& p : parts_) ids = p->process(std::move(ids));
    return ids;
  }
  std::vector<int32_t> prefix_ids() const override {
    std::vector<int32_t> out;
    for (auto it = parts_.rbegin(); it != parts_.rend(); ++it) {
      auto p = (*it)->prefix_ids();
      out.insert(out.end(), p.begin(), p.end());
    }
    return out;
  }
  std::vector<int32_t> suffix_ids() const override {
    std::vector<int32_t> out;
    for (const auto& p : parts_) {
      auto s = p->suffix_ids();
      out.insert(out.end(), s.begin(), s.end());
    }
    return out;
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

std::unique_ptr<PostProcessor> template_processing(const nlohmann::json& j, const std::string& path) {
  const auto& single = field(j, "single", path, "TemplateProcessing");
  const auto& specials = field(j, "special_tokens", path, "TemplateProcessing");
  if (!single.is_array()) throw InputError(path, "TemplateProcessing \"single\" is not a list");
  std::vector<int32_t> before, after;
  bool seen_sequence = false;
  for (const auto& piece : single) {
    if (piece.contains("Sequence")) {
      if (seen_sequence) throw InputError(path, "TemplateProcessing \"single\" uses the sequence twice");
      seen_sequence = true;
    } else if (piece.contains("SpecialToken")) {
      const std::string name = str_field(piece.at("SpecialToken"), "id", path, "TemplateProcessing special token");
      if (!specials.is_object() || !specials.contains(name))
        throw InputError(path, "TemplateProcessing uses \"" + name + "\", which is not in its special_tokens");
      const auto& ids = field(specials.at(name), "ids", path, "TemplateProcessing special token " + name);
      if (!ids.is_array()) throw InputError(path, "TemplateProcessing special token " + name + " ids is not a list");
      for (const auto& id : ids) {
        if (!id.is_number_integer()) throw InputError(path, "TemplateProcessing special token " + name + " has a bad id");
        (seen_sequence ? after : before).push_back(id.get<int32_t>());
      }
    } else {
      throw InputError(path, "TemplateProcessing \"single\" has an unknown piece");
    }
  }
  if (!seen_sequence) throw InputError(path, "TemplateProcessing \"single\" has no $A");
  return std::make_unique<Wrap>(std::move(before), std::move(after));
}

int32_t pair_id(const nlohmann::json& j, const char* key, const std::string& path, const std::string& ctx) {
  const auto& v = field(j, key, path, ctx);
  if (!v.is_array() || v.size() != 2 || !v[1].is_number_integer())
    throw InputError(path, ctx + " \"" + key + "\" is not [token, id]");
  return v[1].get<int32_t>();
}

}  // namespace post_processors

std::unique_ptr<PostProcessor> make_post_processor(const nlohmann::json& j, const std::string& path) {
  using namespace post_processors;
  if (j.is_null()) return nullptr;
  const std::string type = type_of(j, path, "post_processor");
  if (type == "TemplateProcessing") return template_processing(j, path);
  if (type == "ByteLevel") return std::make_unique<Noop>();  // only trims offsets, which we do not report
  if (type == "RobertaProcessing" || type == "BertProcessing")
    return std::make_unique<Wrap>(std::vector<int32_t>{pair_id(j, "cls", path, type)},
                                  std::vector<int32_t>{pair_id(j, "sep", path, type)});
  if (type == "Sequence") {
    const auto& list = field(j, "processors", path, "Sequence post_processor");
    if (!list.is_array()) throw InputError(path, "Sequence post_processor \"processors\" is not a list");
    std::vector<std::unique_ptr<PostProcessor>> parts;
    for (const auto& p : list)
      if (auto q = make_post_processor(p, path)) parts.push_back(std::move(q));
    return std::make_unique<Sequence>(std::move(parts));
  }
  throw InputError(path, "unsupported post_processor type \"" + type + "\"");
}

}  // namespace specscope::tok
