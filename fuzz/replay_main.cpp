// A main() for the fuzz targets without libFuzzer: runs LLVMFuzzerTestOneInput once on each file under the folders
// (or files) it is given, in sorted order, as `fuzzer -runs=0 CORPUS` does. Built in the sanitizer build
// (fuzz/CMakeLists.txt, SPECSCOPE_FUZZ_REPLAY), so the committed corpora, regression seeds included, replay under
// ASan+UBSan against the engine library the tests use, with no second build of the parsers. Exit 0 when every
// input returned; a sanitizer report or an escaped exception ends the process with its own error.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {
namespace fs = std::filesystem;

std::vector<fs::path> inputs_under(const fs::path& root) {
  std::vector<fs::path> files;
  if (fs::is_regular_file(root)) return {root};
  for (const auto& entry : fs::recursive_directory_iterator(root))
    if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  size_t replayed = 0;
  for (int a = 1; a < argc; ++a) {
    std::error_code ec;
    if (!fs::exists(argv[a], ec)) {
      std::fprintf(stderr, "%s: no such corpus folder or file\n", argv[a]);
      return 2;
    }
    for (const fs::path& file : inputs_under(argv[a])) {
      std::ifstream in(file, std::ios::binary);
      if (!in) {
        std::fprintf(stderr, "%s: cannot be read\n", file.c_str());
        return 2;
      }
      const std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
      std::fprintf(stderr, "replaying %s (%zu bytes)\n", file.c_str(), bytes.size());
      // A copy of exactly the input's size, so ASan sees a read past its end as libFuzzer would.
      std::vector<uint8_t> data(bytes.begin(), bytes.end());
      static uint8_t nothing = 0;  // an empty input still gets a valid pointer, as libFuzzer gives
      LLVMFuzzerTestOneInput(data.empty() ? &nothing : data.data(), data.size());
      ++replayed;
    }
  }
  std::printf("%zu inputs replayed, no crash\n", replayed);
  return replayed > 0 ? 0 : 1;
}
