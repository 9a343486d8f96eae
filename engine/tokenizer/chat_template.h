#pragma once
// Chat formatting. HF models carry a Jinja chat_template in tokenizer_config.json; rather than embed a Jinja
// engine, SpecScope recognizes the published templates of the families it supports and renders them natively.
#include <memory>
#include <string>
#include <vector>

namespace specscope {

struct ChatMessage {
  std::string role;  // system | user | assistant
  std::string content;
};

class ChatTemplate {
 public:
  enum class Family { Llama2, Llama3, Mistral, ChatML, Vicuna, Zephyr, Plain };

  // Recognizes the family from the template text (empty text -> Plain). bos/eos are the tokenizer's strings.
  static std::shared_ptr<ChatTemplate> detect(const std::string& jinja_template, const std::string& bos_token,
                                              const std::string& eos_token);
  // Reads chat_template (string or list-of-named-templates form) and bos/eos from tokenizer_config.json;
  // a missing file -> Plain. Throws InputError on invalid JSON.
  static std::shared_ptr<ChatTemplate> from_tokenizer_config(const std::string& path);

  Family family() const { return family_; }
  std::string family_name() const;  // "llama2", "llama3", "mistral", "chatml", "vicuna", "zephyr", "plain"
  // Same text as transformers' apply_chat_template(messages, tokenize=False, add_generation_prompt=...).
  // The text includes the BOS string where the template writes it; encode it with add_special=false then.
  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt = true) const;
  // Whether render() writes BOS itself (so the caller must not add another).
  bool renders_bos() const;
  // A human-readable note for Plain: which plain format is used and why.
  std::string note() const { return note_; }

 private:
  Family family_ = Family::Plain;
  std::string bos_, eos_, note_;
};

}  // namespace specscope
