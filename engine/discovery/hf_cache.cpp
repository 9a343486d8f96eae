// The Hugging Face hub cache: <root>/models--<org>--<name>/{refs/<ref> (a commit hash), snapshots/<hash>/ (the
// repo's files as links into blobs/), blobs/}. Each snapshot is one model (or, in GGUF repos, one per .gguf file):
// the one refs/main names is the repo itself, others are named by their ref or their commit.
#include <filesystem>
#include <map>

#include "engine/discovery/hf_layout.h"
#include "engine/discovery/stores.h"
#include "engine/util/mapped_file.h"

namespace specscope::discovery {

namespace fs = std::filesystem;

namespace {

// The first dangling link among a snapshot's files (the blob it points to is missing: a download that was
// interrupted or a blob deleted by hand), or "".
std::string dangling_link(const fs::path& snapshot, int* count) {
  std::string first;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(snapshot, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_symlink(ec) && !fs::exists(it->path(), ec)) {
      if (first.empty()) first = it->path().string();
      ++*count;
    }
  }
  return first;
}

void add(Found f, const std::string& path, Discovery& out) {
  if (probe_into(path, Source::HfCache, f, out)) out.models.push_back(std::move(f));
}

void scan_snapshot(const std::string& root, const std::string& repo_id, const fs::path& snap, const std::string& rev,
                   Discovery& out) {
  int dangling = 0;
  if (const std::string link = dangling_link(snap, &dangling); !link.empty()) {
    std::error_code ec;
    out.problems.push_back({Source::HfCache, link,
                            "a dangling link (its blob " + fs::read_symlink(link, ec).filename().string() +
                                " is missing: an interrupted download?)" +
                                (dangling > 1 ? "; " + std::to_string(dangling - 1) + " more in this snapshot" : "")});
    return;
  }
  Found f;
  f.source = Source::HfCache;
  f.root = root;
  const std::string at = rev.empty() ? "" : "@" + rev;
  std::error_code ec;
  if (fs::exists(snap / "config.json", ec) || fs::exists(snap / "adapter_config.json", ec)) {
    f.name = repo_id + at;
    f.spec = "hf:" + f.name;
    add(std::move(f), snap.string(), out);
    return;
  }
  for (const auto& file : gguf_files_in(snap)) {  // a GGUF repo: one model per file
    Found g = f;
    g.name = repo_id + at + "/" + file;
    g.spec = "hf:" + g.name;
    add(std::move(g), (snap / file).string(), out);
  }
}

}  // namespace

void scan_hf_cache(const std::string& root, Discovery& out) {
  std::error_code ec;
  for (const auto& entry : list_folder(root, Source::HfCache, out)) {
    const std::string repo_id = repo_id_of_cache_folder(entry);
    const fs::path repo = fs::path(root) / entry;
    if (repo_id.empty() || !fs::is_directory(repo, ec)) continue;  // datasets--, spaces--, .locks
    const std::map<std::string, std::string> refs = read_refs(repo.string());  // commit -> ref name
    const fs::path snapshots = repo / "snapshots";
    if (!fs::exists(snapshots, ec)) continue;
    for (const auto& hash : list_folder(snapshots.string(), Source::HfCache, out)) {
      if (!fs::is_directory(snapshots / hash, ec)) continue;
      const auto ref = refs.find(hash);
      // refs/main's snapshot is the repo; another ref's is named by the ref; the rest by a commit prefix.
      const std::string rev = ref == refs.end() ? hash.substr(0, 12) : ref->second == "main" ? "" : ref->second;
      scan_snapshot(root, repo_id, snapshots / hash, rev, out);
    }
  }
}

}  // namespace specscope::discovery
