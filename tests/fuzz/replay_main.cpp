// replay_main.cpp — runs a fuzz target over every file of its seed corpus (regression mode for
// builds without libFuzzer). Exits non-zero only if the target crashes (then the process dies).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  size_t n = 0;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path p(argv[i]);
    if (!std::filesystem::exists(p)) {
      std::cerr << "replay: corpus '" << p.string() << "' does not exist\n";
      return 2;
    }
    auto run = [&](const std::filesystem::path& f) {
      std::ifstream in(f, std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++n;
    };
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(p)) {
        if (e.is_regular_file()) run(e.path());
      }
    } else {
      run(p);
    }
  }
  std::cout << "replayed " << n << " inputs\n";
  return n > 0 ? 0 : 2;
}
