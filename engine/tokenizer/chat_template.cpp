// Recognition of chat templates, and native rendering of the published ones SpecScope knows: the fallback for
// models without a template and for templates the interpreter cannot parse (a model's own template is run by
// the Jinja interpreter, chat_template_interpreted.cpp). See chat_template.h for the detection scheme; each
// render function below mirrors one published Jinja template statement by statement (evaluated the way
// transformers does: trim_blocks + lstrip_blocks, Python str.strip()/`|trim` semantics, raise_exception -> error
// with the template's own message).
//
// Sources of the published templates (verbatim copies live in tests/fixtures/make_chat_templates.py, which
// renders them with transformers to produce the test oracle):
//   llama2-chat          meta-llama/Llama-2-{7,13,70}b-chat-hf; codellama/CodeLlama-*-Instruct-hf (`| trim`)
//   llama2-chat-nostrip  Llama-2 fine-tunes that dropped .strip() (e.g. vibhorag101/llama-2-13b-chat-hf-phr_...)
//   llama3               meta-llama/Meta-Llama-3-{8,70}B-Instruct (current revision)
//   llama3-original      the same repos' first revision (assistant header appended unconditionally)
//   llama3.1             meta-llama/Llama-3.1-*-Instruct, Llama-3.3-70B-Instruct ("26 Jul 2024" default date)
//   llama3.2             meta-llama/Llama-3.2-{1,3}B-Instruct (date = strftime_now("%d %b %Y"))
//   mistral-v0.1         mistralai/Mistral-7B-Instruct-v0.1, first release (eos + ' ' after answers)
//   mistral-v0.2         mistralai/Mixtral-8x7B-Instruct-v0.1 and Mistral-7B-Instruct-v0.2, first release
//   mistral-v0.2-system  Mistral-7B-Instruct-v0.1/v0.2 2024 revision (system -> first user turn)
//   mistral-v0.3         mistralai/Mistral-7B-Instruct-v0.3 (system -> last user turn, only if it is last)
//   mistral-nemo         mistralai/Mistral-Nemo-Instruct-2407
//   chatml               teknium/OpenHermes-2.5-Mistral-7B; NousResearch/Nous-Hermes-2-* (leading BOS)
//   qwen1.5              Qwen/Qwen1.5-*-Chat (last turn left open without a generation prompt)
//   qwen2                Qwen/Qwen2-*-Instruct (default system prompt on the first turn)
//   qwen2.5              Qwen/Qwen2.5-*-Instruct ("You are Qwen, created by Alibaba Cloud...")
//   vicuna-v1.1          FastChat's vicuna_v1.1 prompt, as JailbreakBench's VICUNA_HF_CHAT_TEMPLATE writes it
//   vicuna-v1.5-fallback the community template with the default system prompt built in
//   vicuna-newline       microsoft WizardLM-2-7B (chujiezheng/chat_templates vicuna layout)
//   zephyr               HuggingFaceH4/zephyr-7b-beta; TinyLlama/TinyLlama-1.1B-Chat-v1.0 (same string)
//
// Vicuna repos (lmsys/vicuna-*) ship no chat_template at all, and the model name is not in the files we read,
// so a template-less config is Plain; callers that know the model is Vicuna use for_family(Family::Vicuna).
#include "engine/tokenizer/chat_template.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <functional>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "engine/tokenizer/jinja/text.h"
#include "engine/util/error.h"
#include "engine/util/mapped_file.h"

namespace specscope {

namespace fs = std::filesystem;

// ------------------------------------------------------------------------------------------------------------
// Variant parameters.
// ------------------------------------------------------------------------------------------------------------
struct ChatTemplate::Style {
  std::string variant = "plain";
  bool approximate = false;

  bool strip = true;  // llama2: .strip() the turn content

  // llama3.1 / llama3.2
  std::string knowledge_line = "Cutting Knowledge Date: December 2023\n";
  std::string default_date = "26 Jul 2024";
  bool date_today = false;  // llama3.2: strftime_now("%d %b %Y")
  std::optional<std::string> date_pin;

  bool leading_bos = false;                   // chatml: "{{ bos_token }}" before the turns
  std::optional<std::string> default_system;  // qwen*, vicuna: system prompt used when the conversation has none
};

namespace {

using Style = ChatTemplate::Style;
using Family = ChatTemplate::Family;

// ------------------------------------------------------------------------------------------------------------
// Text helpers.
// ------------------------------------------------------------------------------------------------------------

// Python str.strip() (and Jinja's `trim` filter, which calls it) on UTF-8 text: the interpreter's own.
std::string py_strip(const std::string& s) { return jinja::text::strip(s, std::nullopt, true, true); }

// Python json.dumps(s, ensure_ascii=False), as transformers' tojson filter produces it.
std::string py_json_string(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string today_string() {  // strftime("%d %b %Y") in the C locale, local time (as Python's datetime.now())
  static const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02d %s %04d", tm.tm_mday, kMonths[tm.tm_mon], tm.tm_year + 1900);
  return buf;
}

// ------------------------------------------------------------------------------------------------------------
// Template scanning: string literals + canonical code.
// ------------------------------------------------------------------------------------------------------------
struct Scan {
  std::vector<std::string> literals;  // unescaped string literals and non-blank raw text, in order
  std::string code;                   // canonical code (see chat_template.h)
};

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Jinja string-literal value: Python "unicode-escape" decoding of the text between the quotes.
std::string unescape_literal(const std::string& raw) {
  std::string out;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '\\' || i + 1 == raw.size()) {
      out += raw[i];
      continue;
    }
    const char c = raw[++i];
    auto hex = [&](size_t n) -> std::optional<uint32_t> {  // n hex digits after raw[i]
      uint32_t v = 0;
      for (size_t k = 1; k <= n; ++k) {
        if (i + k >= raw.size() || !std::isxdigit(static_cast<unsigned char>(raw[i + k]))) return std::nullopt;
        const char h = static_cast<char>(std::tolower(static_cast<unsigned char>(raw[i + k])));
        v = v * 16 + static_cast<uint32_t>(h <= '9' ? h - '0' : h - 'a' + 10);
      }
      return v;
    };
    switch (c) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'v': out += '\v'; break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case '\n': break;  // line continuation
      case 'x': case 'u': case 'U': {
        const size_t n = c == 'x' ? 2 : c == 'u' ? 4 : 8;
        if (auto v = hex(n)) {
          append_utf8(out, *v);
          i += n;
        } else {
          out += '\\';
          out += c;
        }
        break;
      }
      default:
        if (c >= '0' && c <= '7') {
          uint32_t v = c - '0';
          for (int k = 0; k < 2 && i + 1 < raw.size() && raw[i + 1] >= '0' && raw[i + 1] <= '7'; ++k)
            v = v * 8 + (raw[++i] - '0');
          append_utf8(out, v);
        } else {
          out += '\\';
          out += c;
        }
    }
  }
  return out;
}

std::string canonical_literal(const std::string& value) {
  std::string out = "'";
  for (char c : value) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\'': out += "\\'"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default: out += c;
    }
  }
  return out + "'";
}

bool is_blank(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c); });
}

// x['key'] / x["key"] -> x.key (after literal canonicalization both are ['key']).
std::string dot_subscripts(const std::string& code) {
  std::string out;
  for (size_t i = 0; i < code.size();) {
    if (code.compare(i, 2, "['") == 0) {
      size_t j = i + 2;
      while (j < code.size() && is_ident_char(code[j])) ++j;
      if (j > i + 2 && !std::isdigit(static_cast<unsigned char>(code[i + 2])) && code.compare(j, 2, "']") == 0) {
        out += '.';
        out.append(code, i + 2, j - i - 2);
        i = j + 2;
        continue;
      }
    }
    out += code[i++];
  }
  return out;
}

Scan scan_template(const std::string& t) {
  Scan s;
  size_t i = 0;
  const size_t n = t.size();
  while (i < n) {
    if (t.compare(i, 2, "{#") == 0) {
      const size_t e = t.find("#}", i + 2);
      i = e == std::string::npos ? n : e + 2;
      continue;
    }
    if (t.compare(i, 2, "{{") == 0 || t.compare(i, 2, "{%") == 0) {
      const bool expr = t[i + 1] == '{';
      const std::string open = expr ? "{{" : "{%", close = expr ? "}}" : "%}";
      i += 2;
      if (i < n && (t[i] == '-' || t[i] == '+')) ++i;
      s.code += open;
      bool pending_space = false;
      while (i < n) {
        if (t.compare(i, 2, close) == 0) {
          i += 2;
          break;
        }
        if ((t[i] == '-' || t[i] == '+') && t.compare(i + 1, 2, close) == 0) {
          i += 3;
          break;
        }
        const char c = t[i];
        // A blank survives only where it separates words: identifiers/keywords and literals.
        const bool prev_word = !s.code.empty() && (is_ident_char(s.code.back()) || s.code.back() == '\'');
        if (pending_space && prev_word && (is_ident_char(c) || c == '\'' || c == '"')) s.code += ' ';
        if (c == '\'' || c == '"') {
          size_t j = i + 1;
          while (j < n && t[j] != c) j += t[j] == '\\' ? 2 : 1;
          const std::string value = unescape_literal(t.substr(i + 1, std::min(j, n) - i - 1));
          s.literals.push_back(value);
          s.code += canonical_literal(value);
          i = std::min(j + 1, n);
          pending_space = false;
          continue;
        }
        if (std::isspace(static_cast<unsigned char>(c))) {
          pending_space = true;
          ++i;
          continue;
        }
        pending_space = false;
        s.code += c;
        ++i;
      }
      s.code += close;
      continue;
    }
    size_t e = n;
    for (const char* d : {"{{", "{%", "{#"}) e = std::min(e, t.find(d, i));
    const std::string raw = t.substr(i, e - i);
    if (!is_blank(raw)) {
      s.literals.push_back(raw);
      s.code += "{{" + canonical_literal(raw) + "}}";
    }
    i = e;
  }
  s.code = dot_subscripts(s.code);
  return s;
}

bool has(const Scan& s, const std::string& frag) { return s.code.find(frag) != std::string::npos; }
bool literal_contains(const Scan& s, const std::string& needle) {
  return std::any_of(s.literals.begin(), s.literals.end(),
                     [&](const std::string& l) { return l.find(needle) != std::string::npos; });
}

// The value of the canonical literal that follows `prefix` (which ends just before the opening quote).
std::optional<std::string> literal_after(const Scan& s, const std::string& prefix) {
  const size_t p = s.code.find(prefix + "'");
  if (p == std::string::npos) return std::nullopt;
  size_t j = p + prefix.size() + 1;
  std::string raw;
  while (j < s.code.size() && s.code[j] != '\'') {
    if (s.code[j] == '\\' && j + 1 < s.code.size()) raw += s.code[j++];
    raw += s.code[j++];
  }
  return unescape_literal(raw);
}

// The middle of a literal "<prefix>X<suffix>" (e.g. the default system turn of a Qwen template).
std::optional<std::string> literal_between(const Scan& s, const std::string& prefix, const std::string& suffix) {
  for (const auto& l : s.literals)
    if (l.size() > prefix.size() + suffix.size() && l.compare(0, prefix.size(), prefix) == 0 &&
        l.compare(l.size() - suffix.size(), suffix.size(), suffix) == 0)
      return l.substr(prefix.size(), l.size() - prefix.size() - suffix.size());
  return std::nullopt;
}

// ------------------------------------------------------------------------------------------------------------
// Published variants: the canonical-code fragments that characterize each one.
// ------------------------------------------------------------------------------------------------------------
struct Variant {
  Family family;
  const char* name;
  std::vector<std::string> fragments;
};

const std::string kAlt = "(message.role=='user')!=(loop.index0%2==0)";
const std::string kL3Turn =
    "'<|start_header_id|>'+message.role+'<|end_header_id|>\\n\\n'+message.content|trim+'<|eot_id|>'";
const std::string kL3Gen = "{{'<|start_header_id|>assistant<|end_header_id|>\\n\\n'}}";
const std::string kL2Sys = "'<<SYS>>\\n'+system_message+'\\n<</SYS>>\\n\\n'+message.content";
const std::string kChatmlTurn = "'<|im_start|>'+message.role+'\\n'+message.content+'<|im_end|>'+'\\n'";
const std::string kChatmlGen = "{{'<|im_start|>assistant\\n'}}";

const std::vector<Variant>& variants() {
  static const std::vector<Variant> v = {
      {Family::Llama2, "llama2-chat",
       {kAlt, kL2Sys, "loop.index0==0 and system_message!=false", "bos_token+'[INST] '+content.strip()+' [/INST]'",
        "' '+content.strip()+' '+eos_token"}},
      {Family::Llama2, "llama2-chat",  // CodeLlama spells .strip() as | trim
       {kAlt, kL2Sys, "loop.index0==0 and system_message!=false", "bos_token+'[INST] '+content|trim+' [/INST]'",
        "' '+content|trim+' '+eos_token"}},
      {Family::Llama2, "llama2-chat-nostrip",
       {kAlt, kL2Sys, "loop.index0==0 and system_message!=false", "bos_token+'[INST] '+content+' [/INST]'",
        "' '+content+' '+eos_token"}},

      {Family::Llama3, "llama3",
       {kL3Turn, "{%if loop.index0==0%}{%set content=bos_token+content%}", "{%if add_generation_prompt%}" + kL3Gen}},
      {Family::Llama3, "llama3-original",
       {kL3Turn, "{%if loop.index0==0%}{%set content=bos_token+content%}", "{%endfor%}" + kL3Gen}},
      {Family::Llama3, "llama3.1",
       {kL3Turn, "{{bos_token}}", "{%set system_message=messages[0].content|trim%}{%set messages=messages[1:]%}",
        "{{'<|start_header_id|>system<|end_header_id|>\\n\\n'}}", "{{'Today Date: '+date_string+'\\n\\n'}}",
        "{{system_message}}{{'<|eot_id|>'}}", "{%if not date_string is defined%}{%set date_string='",
        "{%if add_generation_prompt%}" + kL3Gen}},
      {Family::Llama3, "llama3.2",
       {kL3Turn, "{{bos_token}}", "{%set system_message=messages[0].content|trim%}{%set messages=messages[1:]%}",
        "{{'<|start_header_id|>system<|end_header_id|>\\n\\n'}}", "{{'Today Date: '+date_string+'\\n\\n'}}",
        "{{system_message}}{{'<|eot_id|>'}}", "{%if not date_string is defined%}{%if strftime_now is defined%}",
        "{%set date_string=strftime_now('%d %b %Y')%}", "{%if add_generation_prompt%}" + kL3Gen}},

      {Family::Mistral, "mistral-v0.1",
       {"{{bos_token}}", kAlt, "{{'[INST] '+message.content+' [/INST]'}}", "{{message.content+eos_token+' '}}"}},
      {Family::Mistral, "mistral-v0.2",
       {"{{bos_token}}", kAlt, "{{'[INST] '+message.content+' [/INST]'}}", "{{message.content+eos_token}}"}},
      {Family::Mistral, "mistral-v0.2-system",
       {"{{bos_token}}", kAlt, "loop.first and system_message is defined",
        "{{' [INST] '+system_message+'\\n\\n'+message.content+' [/INST]'}}",
        "{{' [INST] '+message.content+' [/INST]'}}", "{{' '+message.content+eos_token}}"}},
      {Family::Mistral, "mistral-v0.3",
       {"{{bos_token}}", "(message.role=='user')!=(ns.index%2==0)", "loop.last and system_message is defined",
        "{{'[INST] '+system_message+'\\n\\n'+message.content+'[/INST]'}}", "{{'[INST] '+message.content+'[/INST]'}}",
        "{{' '+message.content|trim+eos_token}}"}},
      {Family::Mistral, "mistral-nemo",
       {"{{bos_token}}", "(message.role=='user')!=(ns.index%2==0)", "loop.last and system_message is defined",
        "{{'[INST]'+system_message+'\\n\\n'+message.content+'[/INST]'}}", "{{'[INST]'+message.content+'[/INST]'}}",
        "{{message.content+eos_token}}"}},

      {Family::ChatML, "chatml", {"{%for message in messages%}{{" + kChatmlTurn + "}}{%endfor%}", kChatmlGen}},
      {Family::ChatML, "qwen2",
       {"{%if loop.first and messages[0].role!='system'%}{{'<|im_start|>system\\n", kChatmlTurn, kChatmlGen}},
      {Family::ChatML, "qwen1.5",
       {"{%if loop.first and messages[0].role!='system'%}{{'<|im_start|>system\\n",
        "{{'<|im_start|>'+message.role+'\\n'+message.content}}",
        "{%if(loop.last and add_generation_prompt)or not loop.last%}{{'<|im_end|>'+'\\n'}}",
        "{%if add_generation_prompt and messages[-1].role!='assistant'%}" + kChatmlGen}},
      {Family::ChatML, "qwen2.5",
       {"{{'<|im_start|>system\\n'+messages[0].content+'<|im_end|>\\n'}}{%else%}{{'<|im_start|>system\\n",
        "(message.role=='user')or(message.role=='system' and not loop.first)or(message.role=='assistant' and not "
        "message.tool_calls)",
        kChatmlTurn, "{{'\\n<tool_response>\\n'}}", kChatmlGen}},

      {Family::Vicuna, "vicuna-v1.1",
       {"{{message.content.strip()+' '}}", "{{'USER: '+message.content.strip()+' '}}",
        "{{'ASSISTANT: '+message.content+eos_token+''}}",
        "{%if loop.last and add_generation_prompt%}{{'ASSISTANT:'}}"}},
      {Family::Vicuna, "vicuna-v1.5-fallback",
       {kAlt, "{%set system_message='", "{%if loop.index0==0%}{{system_message}}",
        "{{' USER: '+message.content.strip()}}", "{{' ASSISTANT: '+message.content.strip()+eos_token}}",
        "{%if add_generation_prompt%}{{' ASSISTANT:'}}"}},
      {Family::Vicuna, "vicuna-newline",
       {"{{bos_token+(messages[0].content.strip()+'\\n\\n' if messages[0].role=='system' else '')}}", kAlt,
        "{{'USER: '+message.content.strip()+'\\n'}}", "{{'ASSISTANT: '+message.content.strip()+eos_token+'\\n'}}",
        "{%if loop.last and message.role=='user' and add_generation_prompt%}{{'ASSISTANT:'}}"}},

      {Family::Zephyr, "zephyr",
       {"{{'<|user|>\\n'+message.content+eos_token}}", "{{'<|system|>\\n'+message.content+eos_token}}",
        "{{'<|assistant|>\\n'+message.content+eos_token}}",
        "{%if loop.last and add_generation_prompt%}{{'<|assistant|>'}}"}},
  };
  return v;
}

const char* canonical_variant(Family f) {
  switch (f) {
    case Family::Llama2: return "llama2-chat";
    case Family::Llama3: return "llama3.1";
    case Family::Mistral: return "mistral-v0.3";
    case Family::ChatML: return "chatml";
    case Family::Vicuna: return "vicuna-v1.1";
    case Family::Zephyr: return "zephyr";
    case Family::Plain: break;
  }
  return "plain";
}

const char* family_str(Family f) {
  switch (f) {
    case Family::Llama2: return "llama2";
    case Family::Llama3: return "llama3";
    case Family::Mistral: return "mistral";
    case Family::ChatML: return "chatml";
    case Family::Vicuna: return "vicuna";
    case Family::Zephyr: return "zephyr";
    case Family::Plain: break;
  }
  return "plain";
}

const char* kFastChatSystem =
    "A chat between a curious user and an artificial intelligence assistant. The assistant gives helpful, "
    "detailed, and polite answers to the user's questions.";

const char* kPlainFormat =
    "plain format: each message as \"System: ...\\n\" / \"User: ...\\n\" / \"Assistant: ...\\n\" (other roles "
    "capitalized), then \"Assistant:\" as the generation prompt; no BOS is written (the tokenizer adds its own)";

std::optional<Family> family_by_markers(const Scan& s) {
  if (literal_contains(s, "<|start_header_id|>") && literal_contains(s, "<|end_header_id|>") &&
      literal_contains(s, "<|eot_id|>"))
    return Family::Llama3;
  if (literal_contains(s, "<<SYS>>") && literal_contains(s, "[INST]")) return Family::Llama2;
  if (literal_contains(s, "[INST]") && literal_contains(s, "[/INST]")) return Family::Mistral;
  if (literal_contains(s, "<|im_start|>") && literal_contains(s, "<|im_end|>")) return Family::ChatML;
  if (literal_contains(s, "<|user|>") && literal_contains(s, "<|assistant|>") && !literal_contains(s, "<|end|>"))
    return Family::Zephyr;
  if (literal_contains(s, "USER: ") && literal_contains(s, "ASSISTANT:")) return Family::Vicuna;
  return std::nullopt;
}

// Parameters read from the template's literals.
void read_parameters(const Scan& s, Style& st) {
  const std::string v = st.variant;
  if (v == "llama3.1" || v == "llama3.2") {
    for (const auto& l : s.literals)
      if (l.rfind("Cutting Knowledge Date:", 0) == 0) {
        st.knowledge_line = l;
        break;
      }
    if (auto d = literal_after(s, "{%set date_string=")) st.default_date = *d;
    st.date_today = v == "llama3.2";
  }
  if (v == "qwen2" || v == "qwen1.5" || v == "qwen2.5")
    st.default_system = literal_between(s, "<|im_start|>system\n", "<|im_end|>\n");
  if (v == "chatml") {
    const size_t p = s.code.find("{{bos_token}}"), f = s.code.find("{%for message in messages%}");
    st.leading_bos = p != std::string::npos && (f == std::string::npos || p < f);
  }
  if (v == "vicuna-v1.5-fallback") {
    st.default_system = literal_after(s, "{%set system_message=");
    if (!st.default_system) st.default_system = kFastChatSystem;
  }
  if (v == "llama2-chat-nostrip") st.strip = false;
}

// ------------------------------------------------------------------------------------------------------------
// Rendering, one function per published template.
// ------------------------------------------------------------------------------------------------------------
using Msgs = std::vector<ChatMessage>;

[[noreturn]] void raise(const Style& st, const std::string& message) {
  throw InputError("chat template (" + st.variant + ")", message);
}

const char* kAltMsg = "Conversation roles must alternate user/assistant/user/assistant/...";
const char* kAltMsgSys =
    "After the optional system message, conversation roles must alternate user/assistant/user/assistant/...";

std::string render_llama2(const Msgs& m, const Style& st, const std::string& bos, const std::string& eos) {
  const bool has_sys = m[0].role == "system";
  const size_t first = has_sys ? 1 : 0;
  auto clean = [&](const std::string& x) { return st.strip ? py_strip(x) : x; };
  std::string out;
  for (size_t i = first; i < m.size(); ++i) {
    const size_t idx = i - first;
    if ((m[i].role == "user") != (idx % 2 == 0)) raise(st, kAltMsg);
    const std::string content =
        idx == 0 && has_sys ? "<<SYS>>\n" + m[0].content + "\n<</SYS>>\n\n" + m[i].content : m[i].content;
    if (m[i].role == "user")
      out += bos + "[INST] " + clean(content) + " [/INST]";
    else if (m[i].role == "assistant")
      out.append(" ").append(clean(content)).append(" ").append(eos);
  }
  return out;
}

std::string l3_turn(const std::string& role, const std::string& content) {
  return "<|start_header_id|>" + role + "<|end_header_id|>\n\n" + content + "<|eot_id|>";
}

std::string render_llama3(const Msgs& m, const Style& st, bool gen, const std::string& bos) {
  std::string out;
  for (size_t i = 0; i < m.size(); ++i) out += (i == 0 ? bos : "") + l3_turn(m[i].role, py_strip(m[i].content));
  if (gen || st.variant == "llama3-original") out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

std::string render_llama31(const Msgs& m, const Style& st, bool gen, const std::string& bos,
                           const std::string& date) {
  const bool has_sys = m[0].role == "system";
  std::string out = bos + "<|start_header_id|>system<|end_header_id|>\n\n" + st.knowledge_line + "Today Date: " +
                    date + "\n\n" + (has_sys ? py_strip(m[0].content) : "") + "<|eot_id|>";
  for (size_t i = has_sys ? 1 : 0; i < m.size(); ++i) {
    if (m[i].role == "ipython" || m[i].role == "tool")  // a string "is iterable" -> tojson
      out += "<|start_header_id|>ipython<|end_header_id|>\n\n" + py_json_string(m[i].content) + "<|eot_id|>";
    else
      out += l3_turn(m[i].role, py_strip(m[i].content));
  }
  if (gen) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

std::string render_mistral(const Msgs& m, const Style& st, const std::string& bos, const std::string& eos) {
  const std::string& v = st.variant;
  std::string out = bos;
  if (v == "mistral-v0.1" || v == "mistral-v0.2") {
    for (size_t i = 0; i < m.size(); ++i) {
      if ((m[i].role == "user") != (i % 2 == 0)) raise(st, kAltMsg);
      if (m[i].role == "user")
        out += "[INST] " + m[i].content + " [/INST]";
      else if (m[i].role == "assistant")
        out += m[i].content + eos + (v == "mistral-v0.1" ? " " : "");
      else
        raise(st, "Only user and assistant roles are supported!");
    }
    return out;
  }
  const char* kRoleMsg =
      "Only user and assistant roles are supported, with the exception of an initial optional system message!";
  const bool has_sys = m[0].role == "system";
  const size_t first = has_sys ? 1 : 0;
  if (v == "mistral-v0.2-system") {
    for (size_t i = first; i < m.size(); ++i) {
      const size_t idx = i - first;
      if ((m[i].role == "user") != (idx % 2 == 0)) raise(st, kAltMsgSys);
      if (m[i].role == "user")
        out += idx == 0 && has_sys ? " [INST] " + m[0].content + "\n\n" + m[i].content + " [/INST]"
                                   : " [INST] " + m[i].content + " [/INST]";
      else if (m[i].role == "assistant")
        out += " " + m[i].content + eos;
      else
        raise(st, kRoleMsg);
    }
    return out;
  }
  // mistral-v0.3 / mistral-nemo: alternation is checked first over all turns (tool turns skipped).
  size_t k = 0;
  for (size_t i = first; i < m.size(); ++i) {
    if (m[i].role == "tool" || m[i].role == "tool_results") continue;
    if ((m[i].role == "user") != (k % 2 == 0)) raise(st, kAltMsgSys);
    ++k;
  }
  const bool nemo = v == "mistral-nemo";
  const std::string open = nemo ? "[INST]" : "[INST] ";
  for (size_t i = first; i < m.size(); ++i) {
    const bool last = i + 1 == m.size();
    if (m[i].role == "user")
      out += open + (last && has_sys ? m[0].content + "\n\n" : "") + m[i].content + "[/INST]";
    else if (m[i].role == "assistant")
      out += nemo ? m[i].content + eos : " " + py_strip(m[i].content) + eos;
    else if (m[i].role == "tool" || m[i].role == "tool_results")
      raise(st, "Tool call IDs should be alphanumeric strings with length 9!");  // ChatMessage has no tool_call_id
    else
      raise(st, kRoleMsg);
  }
  return out;
}

std::string im(const std::string& role, const std::string& content) {
  return "<|im_start|>" + role + "\n" + content + "<|im_end|>\n";
}

std::string render_chatml(const Msgs& m, const Style& st, bool gen, const std::string& bos) {
  const std::string& v = st.variant;
  const std::string def = st.default_system.value_or("");
  std::string out;
  if (v == "qwen2.5") {
    const bool has_sys = m[0].role == "system";
    out += has_sys ? im("system", m[0].content) : im("system", def);
    for (size_t i = 0; i < m.size(); ++i) {
      const auto& r = m[i].role;
      if (r == "user" || (r == "system" && i != 0) || r == "assistant") {
        out += im(r, m[i].content);
      } else if (r == "tool") {
        if (i == 0 || m[i - 1].role != "tool") out += "<|im_start|>user";
        out += "\n<tool_response>\n" + m[i].content + "\n</tool_response>";
        if (i + 1 == m.size() || m[i + 1].role != "tool") out += "<|im_end|>\n";
      }
    }
    if (gen) out += "<|im_start|>assistant\n";
    return out;
  }
  if (v == "chatml" && st.leading_bos) out += bos;
  for (size_t i = 0; i < m.size(); ++i) {
    if (i == 0 && (v == "qwen2" || v == "qwen1.5") && m[0].role != "system") out += im("system", def);
    if (v == "qwen1.5") {
      out += "<|im_start|>" + m[i].role + "\n" + m[i].content;
      if ((i + 1 == m.size() && gen) || i + 1 != m.size()) out += "<|im_end|>\n";
    } else {
      out += im(m[i].role, m[i].content);
    }
  }
  if (v == "qwen1.5" ? gen && m.back().role != "assistant" : gen) out += "<|im_start|>assistant\n";
  return out;
}

std::string render_vicuna(const Msgs& m, const Style& st, bool gen, const std::string& bos, const std::string& eos) {
  const std::string& v = st.variant;
  std::string out;
  if (v == "vicuna-v1.1") {
    // for_family(Vicuna): FastChat always starts with its system prompt.
    Msgs with_sys;
    const Msgs* msgs = &m;
    if (st.default_system && m[0].role != "system") {
      with_sys.push_back({"system", *st.default_system});
      with_sys.insert(with_sys.end(), m.begin(), m.end());
      msgs = &with_sys;
    }
    for (size_t i = 0; i < msgs->size(); ++i) {
      const auto& x = (*msgs)[i];
      if (x.role == "system")
        out += py_strip(x.content) + " ";
      else if (x.role == "user")
        out += "USER: " + py_strip(x.content) + " ";
      else if (x.role == "assistant")
        out += "ASSISTANT: " + x.content + eos;
      if (i + 1 == msgs->size() && gen) out += "ASSISTANT:";
    }
    return out;
  }
  const bool has_sys = m[0].role == "system";
  const size_t first = has_sys ? 1 : 0;
  if (v == "vicuna-v1.5-fallback") {
    const std::string sys = has_sys ? m[0].content : st.default_system.value_or("");
    for (size_t i = first; i < m.size(); ++i) {
      const size_t idx = i - first;
      if ((m[i].role == "user") != (idx % 2 == 0)) raise(st, kAltMsg);
      if (idx == 0) out += sys;
      if (m[i].role == "user")
        out += " USER: " + py_strip(m[i].content);
      else if (m[i].role == "assistant")
        out += " ASSISTANT: " + py_strip(m[i].content) + eos;
    }
    if (gen) out += " ASSISTANT:";
    return out;
  }
  // vicuna-newline
  out = bos + (has_sys ? py_strip(m[0].content) + "\n\n" : "");
  for (size_t i = first; i < m.size(); ++i) {
    const size_t idx = i - first;
    if ((m[i].role == "user") != (idx % 2 == 0)) raise(st, kAltMsg);
    if (m[i].role == "user")
      out += "USER: " + py_strip(m[i].content) + "\n";
    else if (m[i].role == "assistant")
      out += "ASSISTANT: " + py_strip(m[i].content) + eos + "\n";
    if (i + 1 == m.size() && m[i].role == "user" && gen) out += "ASSISTANT:";
  }
  return out;
}

std::string render_zephyr(const Msgs& m, bool gen, const std::string& eos) {
  std::string out;
  for (size_t i = 0; i < m.size(); ++i) {
    const auto& r = m[i].role;
    if (r == "user" || r == "system" || r == "assistant") out += "<|" + r + "|>\n" + m[i].content + eos + "\n";
    if (i + 1 == m.size() && gen) out += "<|assistant|>\n";
  }
  return out;
}

std::string render_plain(const Msgs& m, bool gen) {
  std::string out;
  for (const auto& x : m) {
    std::string label = x.role;  // system -> System, user -> User, assistant -> Assistant, tool -> Tool, ...
    if (!label.empty()) label[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(label[0])));
    out += label + ": " + x.content + "\n";
  }
  if (gen) out += "Assistant:";
  return out;
}

}  // namespace

// ------------------------------------------------------------------------------------------------------------
// ChatTemplate.
// ------------------------------------------------------------------------------------------------------------
namespace {
// What detection decides; detect() copies it into the ChatTemplate.
struct Built {
  Family family;
  Style style;
  std::string note;
};

Built classify(const std::string& tmpl) {
  if (is_blank(tmpl))
    return {Family::Plain, Style{}, std::string(kPlainFormat) + "; used because the chat template is empty"};
  const Scan s = scan_template(tmpl);
  const auto fam = family_by_markers(s);
  if (!fam)
    return {Family::Plain, Style{},
            std::string(kPlainFormat) +
                "; used because the chat template is not one SpecScope recognizes (no Llama-2/3, Mistral, ChatML, "
                "Vicuna or Zephyr markers)"};
  const Variant* best = nullptr;
  size_t best_hits = 0;
  bool best_exact = false;
  for (const auto& v : variants()) {
    if (v.family != *fam) continue;
    const size_t hits = std::count_if(v.fragments.begin(), v.fragments.end(),
                                      [&](const std::string& f) { return has(s, f); });
    const bool exact = hits == v.fragments.size();
    // Prefer exact matches, then the one explaining the most structure.
    if (!best || (exact && !best_exact) || (exact == best_exact && hits > best_hits)) {
      best = &v;
      best_hits = hits;
      best_exact = exact;
    }
  }
  Style st;
  st.variant = best->name;
  st.approximate = !best_exact;
  read_parameters(s, st);
  std::string note;
  if (st.approximate) {
    note = std::string("chat template has ") + family_str(*fam) +
           " markers but not the structure of a published template SpecScope knows; rendering it as " +
           st.variant + " (closest match), so the prompt may differ from what transformers renders";
  } else if (st.variant.rfind("qwen", 0) == 0 && !st.default_system) {
    note = "default system prompt not found in the template";
  }
  return {*fam, st, note};
}
}  // namespace

std::shared_ptr<ChatTemplate> ChatTemplate::detect(const std::string& jinja_template, const std::string& bos_token,
                                                   const std::string& eos_token) {
  auto t = native(jinja_template, bos_token, eos_token);
  if (!is_blank(jinja_template)) t->use_own_template(jinja_template);
  return t;
}

std::shared_ptr<ChatTemplate> ChatTemplate::native(const std::string& jinja_template, const std::string& bos_token,
                                                   const std::string& eos_token) {
  Built b = classify(jinja_template);
  auto t = std::make_shared<ChatTemplate>();
  t->family_ = b.family;
  t->bos_ = bos_token;
  t->eos_ = eos_token;
  t->note_ = b.note;
  t->style_ = std::make_shared<Style>(std::move(b.style));
  return t;
}

std::shared_ptr<ChatTemplate> ChatTemplate::for_family(Family family, const std::string& bos_token,
                                                       const std::string& eos_token) {
  auto t = std::make_shared<ChatTemplate>();
  t->family_ = family;
  t->bos_ = bos_token;
  t->eos_ = eos_token;
  Style st;
  st.variant = canonical_variant(family);
  if (family == Family::Vicuna) st.default_system = kFastChatSystem;
  if (family == Family::Plain) t->note_ = std::string(kPlainFormat) + "; chosen explicitly";
  t->style_ = std::make_shared<Style>(std::move(st));
  return t;
}

namespace {
std::string token_string(const nlohmann::json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object() && j.contains("content") && j["content"].is_string()) return j["content"].get<std::string>();
  return "";
}
}  // namespace

std::shared_ptr<ChatTemplate> ChatTemplate::from_tokenizer_config(const std::string& path) {
  fs::path p(path);
  std::error_code ec;
  if (fs::is_directory(p, ec)) p /= "tokenizer_config.json";
  auto plain = [&](const std::string& why) {
    auto t = detect("", "", "");
    t->note_ = std::string(kPlainFormat) + "; used because " + why +
               ". (Vicuna and other repos that ship no chat_template cannot be recognized from their files; "
               "choose their format explicitly, e.g. ChatTemplate::for_family(Family::Vicuna, ...))";
    return t;
  };
  if (path.empty() || !fs::is_regular_file(p, ec))
    return plain("there is no tokenizer_config.json at '" + p.string() + "'");

  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text_file(p.string()));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(p.string(), std::string("invalid JSON: ") + e.what());
  }
  SPEC_INPUT_CHECK(j.is_object(), p.string(), "expected a JSON object (tokenizer_config.json)");
  const std::string bos = j.contains("bos_token") ? token_string(j["bos_token"]) : "";
  const std::string eos = j.contains("eos_token") ? token_string(j["eos_token"]) : "";

  std::string tmpl;
  std::string origin = p.string();
  const fs::path jinja = p.parent_path() / "chat_template.jinja";
  if (fs::is_regular_file(jinja, ec)) {  // as in transformers, a chat_template.jinja file takes priority
    tmpl = read_text_file(jinja.string());
    origin = jinja.string();
  } else if (j.contains("chat_template") && !j["chat_template"].is_null()) {
    const auto& ct = j["chat_template"];
    if (ct.is_string()) {
      tmpl = ct.get<std::string>();
    } else if (ct.is_array()) {
      bool found = false;
      for (const auto& e : ct) {
        SPEC_INPUT_CHECK(e.is_object() && e.contains("name") && e["name"].is_string() && e.contains("template") &&
                             e["template"].is_string(),
                         p.string(), "chat_template list entries must be {\"name\": ..., \"template\": ...}");
        if (e["name"].get<std::string>() == "default") {
          tmpl = e["template"].get<std::string>();
          found = true;
        }
      }
      if (!found) return plain("the chat_template list in '" + p.string() + "' has no template named \"default\"");
    } else {
      throw InputError(p.string(), "chat_template must be a string or a list of {\"name\", \"template\"} objects");
    }
  } else {
    return plain("'" + p.string() + "' has no chat_template (and there is no chat_template.jinja next to it)");
  }
  auto t = detect(tmpl, bos, eos);
  if (t->family_ == Family::Plain) t->note_ += " (template from '" + origin + "')";
  return t;
}

std::string ChatTemplate::family_name() const { return family_str(family_); }
std::string ChatTemplate::variant() const { return style_ ? style_->variant : "plain"; }
bool ChatTemplate::approximate() const { return style_ && style_->approximate; }

void ChatTemplate::set_date_string(const std::string& date) {
  if (!style_) style_ = std::make_shared<Style>();
  style_->date_pin = date;
}

const std::string* ChatTemplate::pinned_date() const { return style_ && style_->date_pin ? &*style_->date_pin : nullptr; }

std::string ChatTemplate::date_string() const {
  if (!style_ || (style_->variant != "llama3.1" && style_->variant != "llama3.2")) return "";
  if (style_->date_pin) return *style_->date_pin;
  return style_->date_today ? today_string() : style_->default_date;
}

bool ChatTemplate::renders_bos() const {
  if (jinja_) return true;
  if (bos_.empty() || !style_) return false;
  switch (family_) {
    case Family::Llama2:
    case Family::Llama3:
    case Family::Mistral:
      return true;
    case Family::ChatML:
      return style_->variant == "chatml" && style_->leading_bos;
    case Family::Vicuna:
      return style_->variant == "vicuna-newline";
    case Family::Zephyr:
    case Family::Plain:
      return false;
  }
  return false;
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  static const Style kPlain;
  const Style& st = style_ ? *style_ : kPlain;
  if (messages.empty())
    throw InputError("chat template (" + st.variant + ")",
                     "Cannot apply chat template to an empty conversation. Provide at least one message.");
  if (jinja_) return render_interpreted(messages, add_generation_prompt);
  switch (family_) {
    case Family::Llama2:
      return render_llama2(messages, st, bos_, eos_);
    case Family::Llama3:
      if (st.variant == "llama3.1" || st.variant == "llama3.2")
        return render_llama31(messages, st, add_generation_prompt, bos_, date_string());
      return render_llama3(messages, st, add_generation_prompt, bos_);
    case Family::Mistral:
      return render_mistral(messages, st, bos_, eos_);
    case Family::ChatML:
      return render_chatml(messages, st, add_generation_prompt, bos_);
    case Family::Vicuna:
      return render_vicuna(messages, st, add_generation_prompt, bos_, eos_);
    case Family::Zephyr:
      return render_zephyr(messages, add_generation_prompt, eos_);
    case Family::Plain:
      break;
  }
  return render_plain(messages, add_generation_prompt);
}

}  // namespace specscope
