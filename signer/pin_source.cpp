// pin_source.cpp — reading a PIN into SecretBytes from env:, file: or fd: (see pin_source.h).
#include "signer/pin_source.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string>

#include "clawguard/file_io.h"
#include "clawguard/limits.h"
#include "clawguard/unique_fd.h"

namespace clawguard::signer {
namespace {

constexpr std::string_view kForms = "expected env:VAR, file:PATH or fd:N";

// ReadAllBounded reads |fd| to EOF into a SecretBytes of at most limits::kMaxPinFile bytes.
Result<SecretBytes> ReadAllBounded(int fd, const std::string& what) {
  SecretBytes buf(static_cast<size_t>(limits::kMaxPinFile) + 1);
  uint8_t* data = InsecureSecretAccess::MutableData(buf);
  size_t used = 0;
  while (used < buf.size()) {
    const ssize_t got = ::read(fd, data + used, buf.size() - used);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      return Status(Reason::kHsmLoginFailed,
                    "cannot read the PIN from " + what + ": " + std::strerror(errno));
    }
    if (got == 0) break;
    used += static_cast<size_t>(got);
  }
  if (used > limits::kMaxPinFile) {
    return Status(Reason::kHsmLoginFailed, "the PIN source " + what + " holds more than " +
                                               std::to_string(limits::kMaxPinFile) +
                                               " bytes; it must hold only the PIN");
  }
  return SecretBytes(std::string_view(reinterpret_cast<const char*>(data), used));
}

// Finish strips one trailing newline and checks the length.
Result<SecretBytes> Finish(SecretBytes raw, const std::string& what) {
  std::string_view v = InsecureSecretAccess::View(raw);
  if (!v.empty() && v.back() == '\n') {
    v.remove_suffix(1);
    if (!v.empty() && v.back() == '\r') v.remove_suffix(1);
  }
  if (v.empty()) return Status(Reason::kHsmLoginFailed, "the PIN from " + what + " is empty");
  if (v.size() > limits::kMaxPinLength) {
    return Status(Reason::kHsmLoginFailed, "the PIN from " + what + " is longer than " +
                                               std::to_string(limits::kMaxPinLength) + " bytes");
  }
  return SecretBytes(v);
}

Result<SecretBytes> FromEnv(std::string_view var) {
  const std::string name(var);
  if (name.empty() || name.find('=') != std::string::npos) {
    return Status(Reason::kUsage,
                  "bad PIN source env:…: " + std::string(kForms) + " with a variable name");
  }
  char* value = std::getenv(name.c_str());
  if (value == nullptr) {
    return Status(Reason::kHsmLoginFailed, "the PIN variable " + name +
                                               " is not set; export it (from a CI secret) "
                                               "before running clawguard");
  }
  SecretBytes pin{std::string_view(value)};
  // Overwrite the environment's copy before unsetting it: unsetenv only unlinks the string.
  sodium_memzero(value, std::strlen(value));
  ::unsetenv(name.c_str());
  return Finish(std::move(pin), "env:" + name);
}

Result<SecretBytes> FromFile(std::string_view path_view) {
  const std::string path(path_view);
  if (path.empty()) return Status(Reason::kUsage, "bad PIN source 'file:': " + std::string(kForms));
  // A pipe would block the open (no writer yet) or the read: file: takes regular files only, and
  // fd:N is the form for a PIN passed through a pipe.
  auto fd = OpenRegularFile(
      path, "to pass the PIN through a pipe, use --pin-source fd:N with the pipe's read end");
  if (!fd) return fd.error().WithContext("the PIN file");
  CLAWGUARD_ASSIGN_OR_RETURN(SecretBytes raw, ReadAllBounded(fd->get(), "file:" + path));
  return Finish(std::move(raw), "file:" + path);
}

Result<SecretBytes> FromFd(std::string_view digits) {
  int fd_num = -1;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), fd_num);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || fd_num < 0) {
    return Status(Reason::kUsage,
                  "bad PIN source fd:…: " + std::string(kForms) + " with a descriptor number");
  }
  if (::fcntl(fd_num, F_GETFD) < 0) {
    return Status(Reason::kHsmLoginFailed,
                  "the PIN descriptor fd:" + std::to_string(fd_num) + " is not open");
  }
  UniqueFd fd(fd_num);  // read to EOF, then closed
  CLAWGUARD_ASSIGN_OR_RETURN(SecretBytes raw,
                             ReadAllBounded(fd.get(), "fd:" + std::to_string(fd_num)));
  return Finish(std::move(raw), "fd:" + std::to_string(fd_num));
}

}  // namespace

Result<SecretBytes> ReadPin(std::string_view src) {
  if (src.rfind("env:", 0) == 0) return FromEnv(src.substr(4));
  if (src.rfind("file:", 0) == 0) return FromFile(src.substr(5));
  if (src.rfind("fd:", 0) == 0) return FromFd(src.substr(3));
  // Never echo |src|: a user who typed the PIN itself here must not see it in a log.
  return Status(Reason::kUsage, "bad --pin-source: " + std::string(kForms) +
                                    " (a PIN is never given on the command line)");
}

}  // namespace clawguard::signer
