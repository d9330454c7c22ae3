// The corpus replayer: a main() for a fuzz target outside libFuzzer, so that every stored corpus
// input runs as a regression test in the ordinary (GCC, no sanitizer) test build.
//
// Usage: <name>_corpus_test PATH...   (each PATH a corpus directory or a single input file)
//
// Runs LLVMFuzzerTestOneInput() on every regular file, in name order, and exits 0. A property
// violation aborts inside the target; a missing or empty corpus is an error too, so that a corpus
// that stops being found is noticed instead of passing vacuously.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

bool ReadFile(const fs::path& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const fs::path path = argv[i];
    std::error_code error;
    if (fs::is_directory(path, error)) {
      for (const fs::directory_entry& entry : fs::directory_iterator(path, error)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
    } else if (fs::is_regular_file(path, error)) {
      files.push_back(path);
    } else {
      std::fprintf(stderr, "%s: no such file or directory\n", argv[i]);
      return 1;
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "no corpus input found\n");
    return 1;
  }
  std::sort(files.begin(), files.end());
  std::string bytes;
  for (const fs::path& file : files) {
    if (!ReadFile(file, bytes)) {
      std::fprintf(stderr, "%s: cannot read\n", file.c_str());
      return 1;
    }
    // Named before the run, so that the input of an abort is the last line printed.
    std::fprintf(stderr, "running %s (%zu bytes)\n", file.c_str(), bytes.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::fprintf(stderr, "%zu inputs passed\n", files.size());
  return 0;
}
