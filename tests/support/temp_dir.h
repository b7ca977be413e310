// temp_dir.h — TempDir: a fresh directory under $TMPDIR, removed with its contents at the end.
#ifndef CLAWGUARD_TESTS_SUPPORT_TEMP_DIR_H_
#define CLAWGUARD_TESTS_SUPPORT_TEMP_DIR_H_

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace clawguard::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string Sub(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// WriteFile writes |bytes| to |path| (creating parent directories).
void WriteFile(const std::string& path, const std::string& bytes);
// ReadFile reads a whole file ("" if missing).
std::string ReadFile(const std::string& path);

// CommandResult is what RunCommand captured.
struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};
// RunCommand runs |argv| (no shell) with |env| added to the environment and |stdin_data| on
// its stdin; captures stdout and stderr.
CommandResult RunCommand(const std::vector<std::string>& argv,
                         const std::vector<std::pair<std::string, std::string>>& env = {},
                         const std::string& stdin_data = "");
// RunClawguard runs the built `clawguard` binary with |args|.
CommandResult RunClawguard(const std::vector<std::string>& args,
                           const std::vector<std::pair<std::string, std::string>>& env = {},
                           const std::string& stdin_data = "");

}  // namespace clawguard::testing

#endif  // CLAWGUARD_TESTS_SUPPORT_TEMP_DIR_H_
