#include "tests/session_test_support.h"

#include <unistd.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <random>

namespace specscope::test {

std::filesystem::path fresh_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / ("specscope-test-" + std::to_string(::getpid()) + "-" + name);
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

StepRecord synthetic_step(int64_t run_id, int64_t index, int max_nodes) {
  std::mt19937_64 rng(uint64_t(run_id) * 1000003u + uint64_t(index));
  std::uniform_real_distribution<float> u(0.f, 1.f);
  StepRecord r;
  r.step = int(index);
  r.method = "sps";
  r.position = int(100 + index * 3);
  r.root_token = int32_t(rng() % 4096);
  const int n = int(rng() % uint64_t(max_nodes + 1));
  for (int i = 0; i < n; ++i) {
    DraftNode d;
    d.id = i;
    d.parent = i == 0 ? -1 : int(rng() % uint64_t(i)) - (rng() % 3 == 0 ? 1 : 0);
    if (d.parent < -1) d.parent = -1;
    d.depth = d.parent < 0 ? 1 : 2;
    d.token = int32_t(rng() % 4096);
    d.text = i % 7 == 3 ? std::string("a,\"quoted\"\nline") : "tok" + std::to_string(d.token) + " \xc3\xa9";
    d.draft_prob = i % 5 == 4 ? kNoValue : u(rng);
    d.cum_score = i % 3 == 0 ? kNoValue : std::log(u(rng) + 1e-6f);
    d.source = NodeSource(rng() % 7);
    d.source_index = int(rng() % 5);
    d.pruned = rng() % 11 == 0;
    d.target_prob = d.pruned ? kNoValue : u(rng);
    d.accept_prob = d.pruned ? kNoValue : u(rng);
    d.decision = d.pruned ? NodeDecision::Pruned : NodeDecision(rng() % 3);
    r.nodes.push_back(d);
  }
  for (int i = 0; i < n && i < 3; ++i) r.accepted_path.push_back(i);
  r.bonus_token = int32_t(rng() % 4096);
  r.bonus_text = "bonus" + std::to_string(index);
  r.bonus_source = rng() % 2 ? BonusSource::Target : BonusSource::Residual;
  r.bonus_prob = index % 4 == 0 ? kNoValue : u(rng);
  for (int i : r.accepted_path) r.committed.push_back(r.nodes[size_t(i)].token);
  r.committed.push_back(r.bonus_token);
  r.timings = {int64_t(rng() % 500), int64_t(rng() % 2000), int64_t(rng() % 100), int64_t(rng() % 50)};
  r.target_forwards = 1;
  r.target_tokens = n + 1;
  r.draft_forwards = int(rng() % 5);
  r.draft_tokens = int(rng() % 30);
  r.lossy = rng() % 13 == 0;
  // A mixture-of-experts target's count on two steps in three (schema 6), none on the third, as a dense one records.
  r.experts_per_layer = index % 3 == 2 ? kNoValue : 2.0f + 6.0f * u(rng);
  return r;
}

std::string synthetic_piece(int64_t run_id, int64_t index) {
  return " piece" + std::to_string(run_id) + ":" + std::to_string(index);
}

sessions::SessionMeta synthetic_session() {
  sessions::SessionMeta m;
  m.kind = "run";
  m.title = "synthetic";
  m.model = {"/models/x", "LlamaForCausalLM", std::string(64, 'a'), std::string(64, 'b')};
  m.device = "test cpu";
  return m;
}

sessions::RunMeta synthetic_run(const std::string& method) {
  sessions::RunMeta r;
  r.method.name = method;
  r.method.draft_path = "/models/draft";
  r.method.options = {{"gamma", "4"}};
  r.sampling.temperature = 0.7f;
  r.sampling.top_p = 0.9f;
  r.sampling.seed = 42;
  r.max_tokens = 64;
  r.stop_strings = {"\n\n"};
  r.prompt = "hello";
  r.prompt_tokens = 3;
  return r;
}

std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

}  // namespace specscope::test
