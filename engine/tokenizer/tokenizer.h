#pragma once
// Tokenizers read from a Hugging Face tokenizer.json: byte-level BPE (GPT-2 / Llama-3 / Qwen2 pre-tokenizers)
// and SentencePiece-style BPE with byte fallback (Llama-2 / Mistral / TinyLlama), with added and special tokens.
// Results equal the `tokenizers` library's for the same file.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace specscope {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // tokenizer_config_path may be empty or missing; it supplies bos/eos names and add_bos_token when present.
  // Throws InputError naming the file and the problem.
  static std::shared_ptr<Tokenizer> from_files(const std::string& tokenizer_json_path,
                                               const std::string& tokenizer_config_path = "");

  // HF `encode(text, add_special_tokens=add_special)`: special/added tokens in the text are matched as
  // tokens; add_special applies the post-processor (e.g. BOS for Llama). Invalid UTF-8 -> InputError("prompt").
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special = true) const = 0;
  // HF `decode(ids, skip_special_tokens=skip_special)`.
  virtual std::string decode(std::span<const int32_t> ids, bool skip_special = false) const = 0;
  // The raw bytes one token stands for (after byte-level / byte-fallback mapping; may be partial UTF-8).
  virtual std::string token_bytes(int32_t id) const = 0;
  // The vocabulary string of a token as stored in tokenizer.json (e.g. "Ġthe", "▁the", "<0x0A>").
  virtual std::string token_piece(int32_t id) const = 0;
  virtual std::optional<int32_t> piece_to_id(std::string_view piece) const = 0;
  virtual int vocab_size() const = 0;  // largest id + 1, added tokens included
  virtual bool is_special(int32_t id) const = 0;
  virtual std::string kind() const = 0;  // "byte-level-bpe" | "sentencepiece-bpe"

  std::optional<int32_t> bos_id, eos_id, pad_id, unk_id;
  bool add_bos = false;  // whether encode(add_special=true) prepends BOS
};

// Turns a stream of token ids into text without ever emitting half a UTF-8 code point: bytes of an
// incomplete sequence are held back until it completes (or are flushed as U+FFFD at the end).
// Handles SentencePiece's leading-space rule the same way decode() does.
class StreamingDecoder {
 public:
  explicit StreamingDecoder(const Tokenizer& tok, bool skip_special = true);
  std::string push(int32_t id);  // returns the newly complete text (possibly empty)
  std::string flush();           // whatever is held back
  void reset();

 private:
  const Tokenizer& tok_;
  bool skip_special_;
  std::vector<int32_t> ids_;
  size_t emitted_bytes_ = 0;
};

// Validates UTF-8; returns the byte offset of the first invalid sequence, or npos when valid.
size_t find_invalid_utf8(std::string_view s);

}  // namespace specscope
