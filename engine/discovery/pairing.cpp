#include "engine/discovery/pairing.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>

#include "engine/discovery/stores.h"
#include "engine/discovery/tokenizer_fingerprint.h"
#include "engine/tokenizer/shared_vocabulary.h"
#include "engine/util/ascii_case.h"

namespace specscope::discovery {

namespace {

std::string last_component(const std::string& s) {
  std::string t = s;
  while (!t.empty() && t.back() == '/') t.pop_back();
  const auto slash = t.rfind('/');
  return slash == std::string::npos ? t : t.substr(slash + 1);
}

// The names a target goes by: its tool's name without an Ollama tag or an HF revision or file, its last
// component, and its folder's name.
std::vector<std::string> names_of(const Found& t) {
  std::string n = t.name;
  if (t.source == Source::Ollama) n = n.substr(0, n.rfind(':'));
  if (t.source == Source::HfCache) {
    n = n.substr(0, n.find('@'));
    if (const auto slash = n.find('/', n.find('/') + 1); slash != std::string::npos && t.facts.format == "gguf")
      n = n.substr(0, slash);
  }
  return {ascii_lower(n), ascii_lower(last_component(n)), ascii_lower(last_component(t.path))};
}

bool is_target(const Found& f) {
  return (f.facts.kind == ModelKind::Model || f.facts.kind == ModelKind::LoraAdapter) && f.facts.loads();
}

std::vector<std::string> methods_of(ModelKind k) {
  switch (k) {
    case ModelKind::Eagle1Head: return {"eagle1", "eagle2"};
    case ModelKind::Eagle3Head: return {"eagle3"};
    case ModelKind::MedusaHead: return {"medusa"};
    default: return {"sps"};
  }
}

std::string sizes(const ModelFacts& f) {
  return "hidden size " + std::to_string(f.target_hidden ? f.target_hidden : f.hidden_size) +
         (f.vocab_size ? ", vocabulary " + std::to_string(f.vocab_size) : "");
}

}  // namespace

bool names_target(const std::string& base, const Found& target) {
  if (base.empty()) return false;
  const std::string b = ascii_lower(base), tail = ascii_lower(last_component(base));
  for (const auto& n : names_of(target))
    if (!n.empty() && (n == b || n == tail)) return true;
  return false;
}

std::string head_misfit(const ModelFacts& head, const ModelFacts& t, bool by_name) {
  const int wants_hidden = head.target_hidden ? head.target_hidden : head.hidden_size;
  if (wants_hidden != t.hidden_size)
    return "its hidden size is " + std::to_string(wants_hidden) + ", the target's " + std::to_string(t.hidden_size);
  if (head.vocab_size && head.vocab_size != t.vocab_size)
    return "its vocabulary is " + std::to_string(head.vocab_size) + ", the target's " + std::to_string(t.vocab_size);
  if (head.kind == ModelKind::Eagle1Head && head.hidden_size != t.hidden_size)
    return "EAGLE-1 heads need the target's hidden size";
  if (head.kind == ModelKind::Eagle3Head) {
    if (head.draft_vocab > t.vocab_size) return "its draft vocabulary is larger than the target's";
    // EagleHead::load taps the inputs of layers 2, N/2 and N-3: three distinct layers of the target.
    const int n = t.num_layers;
    std::vector<int> taps = {2, n / 2, n - 3};
    std::sort(taps.begin(), taps.end());
    if (taps[0] < 0 || taps[2] >= n || std::adjacent_find(taps.begin(), taps.end()) != taps.end())
      return "EAGLE-3 taps layers 2, N/2 and N-3, which are not three layers of a " + std::to_string(n) +
             "-layer target";
  }
  if (!by_name && !head.family.empty() && !t.family.empty() && head.family != t.family)
    return "it is a " + head.family + " head, the target a " + t.family + " model";
  return "";
}

void pair_drafters(Discovery& d) {
  auto& m = d.models;
  for (size_t h = 0; h < m.size(); ++h) {
    ModelFacts& head = m[h].facts;
    if (!head.is_head()) continue;
    if (!head.loads()) {
      m[h].pairing_note = "does not load: " + head.problem;
      continue;
    }
    std::vector<size_t> named;
    for (size_t t = 0; t < m.size(); ++t)
      if (is_target(m[t]) && names_target(head.base_model, m[t])) named.push_back(t);
    const bool by_name = !named.empty();
    std::string why_not;
    int paired = 0;
    for (size_t t = 0; t < m.size(); ++t) {
      if (!is_target(m[t]) || (by_name && std::find(named.begin(), named.end(), t) == named.end())) continue;
      const std::string misfit = head_misfit(head, m[t].facts, by_name);
      if (!misfit.empty()) {
        if (by_name) why_not += (why_not.empty() ? "" : "; ") + m[t].name + ": " + misfit;
        continue;
      }
      d.pairings.push_back({t, h, methods_of(head.kind),
                            by_name ? "base model name" : "architecture, hidden size and vocabulary"});
      ++paired;
    }
    if (!paired)
      m[h].pairing_note = by_name ? "names its base '" + head.base_model + "', which does not fit (" + why_not + ")"
                                  : "no target found with its " + sizes(head);
  }
  // SpS drafters: smaller models with the same tokenizer. Fingerprints are computed only for models whose
  // vocabulary sizes are already close to a target's (tokenizer.json files are large): a family pads its sizes'
  // vocabularies differently (Qwen2.5: 151,936 and 152,064 rows).
  for (size_t t = 0; t < m.size(); ++t) {
    if (!is_target(m[t])) continue;
    for (size_t s = 0; s < m.size(); ++s) {
      if (s == t || m[s].facts.kind != ModelKind::Model || !m[s].facts.loads()) continue;
      if (m[s].facts.parameters >= m[t].facts.parameters ||
          std::abs(m[s].facts.vocab_size - m[t].facts.vocab_size) > kMaxVocabularyDifference)
        continue;
      const std::string& fs_ = fingerprint_of(m[s].facts);
      if (!fs_.empty() && fs_ == fingerprint_of(m[t].facts))
        d.pairings.push_back({t, s, {"sps"}, "same tokenizer"});
    }
  }
  // Preference: a head named for its target first, then by drafter name (stable for equal keys).
  std::stable_sort(d.pairings.begin(), d.pairings.end(), [&](const Pairing& a, const Pairing& b) {
    if (a.target != b.target) return a.target < b.target;
    const bool an = a.basis == "base model name", bn = b.basis == "base model name";
    if (an != bn) return an;
    return m[a.drafter].name < m[b.drafter].name;
  });
}

}  // namespace specscope::discovery
