// headless_chromium.h — test helpers to drive Debian's `chromium` through the DevTools protocol:
// HeadlessChromium launches it (headless, --remote-debugging-port=0, a private profile dir) in its
// own process group and kills the whole group on destruction (every exit path of a test);
// CdpSession is a blocking DevTools client over a Boost.Beast WebSocket with a deadline on every
// wait. Not thread-safe: one test thread drives one browser.
#ifndef CLAWGUARD_TESTS_OPS_SUPPORT_HEADLESS_CHROMIUM_H_
#define CLAWGUARD_TESTS_OPS_SUPPORT_HEADLESS_CHROMIUM_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace clawguard::host::testing {

// kBrowserGuard bounds every wait on the browser (a guard on a loaded machine, never a measured
// duration).
inline constexpr std::chrono::seconds kBrowserGuard{90};

// FindChromium returns the chromium executable ($CLAWGUARD_CHROMIUM, /usr/bin/chromium,
// /usr/bin/chromium-browser), or "" when none is installed.
std::string FindChromium();

class HeadlessChromium {
 public:
  // Launch starts |binary| with its profile under |profile_dir| and waits (up to kBrowserGuard)
  // for DevToolsActivePort. nullptr and |error| set on failure (the process is killed).
  static std::unique_ptr<HeadlessChromium> Launch(const std::string& binary,
                                                  const std::string& profile_dir,
                                                  std::string* error);
  ~HeadlessChromium();  // SIGKILL to the process group, then reaped
  HeadlessChromium(const HeadlessChromium&) = delete;
  HeadlessChromium& operator=(const HeadlessChromium&) = delete;

  uint16_t port() const { return port_; }
  const std::string& browser_path() const { return browser_path_; }  // "/devtools/browser/<id>"
  const std::string& log_path() const { return log_path_; }          // chromium's stderr

 private:
  HeadlessChromium() = default;
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  std::string browser_path_;
  std::string log_path_;
};

class CdpSession {
 public:
  // Connect opens the browser WebSocket at 127.0.0.1:|port| |path|.
  static std::unique_ptr<CdpSession> Connect(uint16_t port, const std::string& path,
                                             std::string* error);
  ~CdpSession();
  CdpSession(const CdpSession&) = delete;
  CdpSession& operator=(const CdpSession&) = delete;

  // Call sends a command (to the page session |session_id| when not empty) and returns its
  // "result"; nullopt with |error| set on a protocol error, a closed socket or the guard.
  std::optional<nlohmann::json> Call(const std::string& method, const nlohmann::json& params,
                                     const std::string& session_id, std::string* error);

  // WaitForEvent returns the first event (already received or arriving before the guard) named
  // |method| for |session_id| that |match| accepts; nullopt otherwise.
  std::optional<nlohmann::json> WaitForEvent(
      const std::string& method, const std::string& session_id,
      const std::function<bool(const nlohmann::json&)>& match, std::string* error);

  // OpenPage creates a blank target and attaches to it (flattened); returns the session id.
  std::optional<std::string> OpenPage(std::string* error);

 private:
  struct Impl;
  explicit CdpSession(std::unique_ptr<Impl> impl);
  // ReadMessage reads one message before |deadline|.
  std::optional<nlohmann::json> ReadMessage(std::chrono::steady_clock::time_point deadline,
                                            std::string* error);
  std::unique_ptr<Impl> impl_;
  int64_t next_id_ = 1;
  std::vector<nlohmann::json> events_;
};

}  // namespace clawguard::host::testing

#endif  // CLAWGUARD_TESTS_OPS_SUPPORT_HEADLESS_CHROMIUM_H_
