// headless_chromium.cpp — launching headless Chromium and a DevTools WebSocket client for tests
// (see headless_chromium.h).
#include "support/headless_chromium.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

namespace clawguard::host::testing {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = boost::beast::websocket;
using tcp = asio::ip::tcp;

bool IsExecutable(const std::string& path) {
  return !path.empty() && ::access(path.c_str(), X_OK) == 0;
}

// RunUntil runs |ioc| until |done| or |deadline|; false when the deadline passed first.
bool RunUntil(asio::io_context& ioc, const bool& done,
              std::chrono::steady_clock::time_point deadline) {
  ioc.restart();
  while (!done) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    if (ioc.run_one_for(deadline - now) == 0 && ioc.stopped()) ioc.restart();
  }
  return true;
}

}  // namespace

std::string FindChromium() {
  if (const char* env = std::getenv("CLAWGUARD_CHROMIUM"); env != nullptr && IsExecutable(env))
    return env;
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (IsExecutable(p)) return p;
  }
  return "";
}

std::unique_ptr<HeadlessChromium> HeadlessChromium::Launch(const std::string& binary,
                                                           const std::string& profile_dir,
                                                           std::string* error) {
  std::unique_ptr<HeadlessChromium> browser(new HeadlessChromium());
  browser->log_path_ = profile_dir + "/chromium.log";
  const std::string user_data = profile_dir + "/profile";
  std::filesystem::create_directories(user_data);
  std::vector<std::string> args = {binary,
                                   "--headless",
                                   "--disable-gpu",
                                   "--no-first-run",
                                   "--no-default-browser-check",
                                   "--disable-background-networking",
                                   "--disable-component-update",
                                   "--disable-sync",
                                   "--disable-extensions",
                                   "--disable-dev-shm-usage",
                                   "--hide-scrollbars",
                                   "--mute-audio",
                                   "--window-size=1280,1000",
                                   "--remote-debugging-address=127.0.0.1",
                                   "--remote-debugging-port=0",
                                   "--user-data-dir=" + user_data};
  if (::geteuid() == 0) args.push_back("--no-sandbox");  // Chromium refuses to run as root with it
  args.push_back("about:blank");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  const int log_fd =
      ::open(browser->log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const pid_t pid = ::fork();
  if (pid < 0) {
    *error = "fork failed";
    if (log_fd >= 0) ::close(log_fd);
    return nullptr;
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    if (log_fd >= 0) {
      ::dup2(log_fd, 1);
      ::dup2(log_fd, 2);
    }
    ::execv(binary.c_str(), argv.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: no race with the kill in the destructor
  if (log_fd >= 0) ::close(log_fd);
  browser->pid_ = pid;

  const std::string port_file = user_data + "/DevToolsActivePort";
  const auto deadline = std::chrono::steady_clock::now() + kBrowserGuard;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      browser->pid_ = -1;
      *error = "chromium exited before opening its DevTools port (see " + browser->log_path_ + ")";
      return nullptr;
    }
    std::ifstream in(port_file);
    std::string port_line, path_line;
    if (in && std::getline(in, port_line) && std::getline(in, path_line) && !path_line.empty()) {
      browser->port_ = static_cast<uint16_t>(std::stoi(port_line));
      browser->browser_path_ = path_line;
      return browser;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // polling a file, not timing
  }
  *error =
      "chromium did not write DevToolsActivePort within the guard (see " + browser->log_path_ + ")";
  return nullptr;
}

HeadlessChromium::~HeadlessChromium() {
  if (pid_ <= 0) return;
  ::kill(-pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
}

struct CdpSession::Impl {
  asio::io_context ioc;
  websocket::stream<tcp::socket> ws{ioc};
};

CdpSession::CdpSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

CdpSession::~CdpSession() {
  boost::system::error_code ec;
  beast::get_lowest_layer(impl_->ws).close(ec);
}

std::unique_ptr<CdpSession> CdpSession::Connect(uint16_t port, const std::string& path,
                                                std::string* error) {
  auto impl = std::make_unique<Impl>();
  try {
    const auto deadline = std::chrono::steady_clock::now() + kBrowserGuard;
    bool done = false;
    boost::system::error_code result;
    const tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), port);
    beast::get_lowest_layer(impl->ws).async_connect(ep, [&](boost::system::error_code ec) {
      result = ec;
      done = true;
    });
    if (!RunUntil(impl->ioc, done, deadline) || result) {
      *error = "cannot connect to the DevTools port: " + result.message();
      return nullptr;
    }
    impl->ws.read_message_max(64 * 1024 * 1024);  // screenshots are large
    done = false;
    impl->ws.async_handshake("127.0.0.1:" + std::to_string(port), path,
                             [&](boost::system::error_code ec) {
                               result = ec;
                               done = true;
                             });
    if (!RunUntil(impl->ioc, done, deadline) || result) {
      *error = "DevTools WebSocket handshake failed: " + result.message();
      return nullptr;
    }
  } catch (const std::exception& e) {
    *error = std::string("DevTools connect: ") + e.what();
    return nullptr;
  }
  return std::unique_ptr<CdpSession>(new CdpSession(std::move(impl)));
}

std::optional<nlohmann::json> CdpSession::ReadMessage(
    std::chrono::steady_clock::time_point deadline, std::string* error) {
  beast::flat_buffer buffer;
  bool done = false;
  boost::system::error_code result;
  impl_->ws.async_read(buffer, [&](boost::system::error_code ec, std::size_t) {
    result = ec;
    done = true;
  });
  if (!RunUntil(impl_->ioc, done, deadline)) {
    boost::system::error_code ignored;
    beast::get_lowest_layer(impl_->ws).cancel(ignored);
    RunUntil(impl_->ioc, done, std::chrono::steady_clock::now() + std::chrono::seconds(5));
    *error = "no DevTools message before the guard";
    return std::nullopt;
  }
  if (result) {
    *error = "DevTools read failed: " + result.message();
    return std::nullopt;
  }
  auto parsed = nlohmann::json::parse(beast::buffers_to_string(buffer.data()), nullptr,
                                      /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    *error = "DevTools sent invalid JSON";
    return std::nullopt;
  }
  return parsed;
}

std::optional<nlohmann::json> CdpSession::Call(const std::string& method,
                                               const nlohmann::json& params,
                                               const std::string& session_id, std::string* error) {
  const int64_t id = next_id_++;
  nlohmann::json msg = {{"id", id}, {"method", method}, {"params", params}};
  if (!session_id.empty()) msg["sessionId"] = session_id;
  const std::string text = msg.dump();
  const auto deadline = std::chrono::steady_clock::now() + kBrowserGuard;
  bool done = false;
  boost::system::error_code result;
  impl_->ws.text(true);
  impl_->ws.async_write(asio::buffer(text), [&](boost::system::error_code ec, std::size_t) {
    result = ec;
    done = true;
  });
  if (!RunUntil(impl_->ioc, done, deadline) || result) {
    *error = method + ": DevTools write failed: " + result.message();
    return std::nullopt;
  }
  while (true) {
    auto m = ReadMessage(deadline, error);
    if (!m) {
      *error = method + ": " + *error;
      return std::nullopt;
    }
    if (m->contains("id") && (*m)["id"] == id) {
      if (m->contains("error")) {
        *error = method + ": " + (*m)["error"].dump();
        return std::nullopt;
      }
      return m->value("result", nlohmann::json::object());
    }
    if (m->contains("method")) events_.push_back(std::move(*m));
  }
}

std::optional<nlohmann::json> CdpSession::WaitForEvent(
    const std::string& method, const std::string& session_id,
    const std::function<bool(const nlohmann::json&)>& match, std::string* error) {
  const auto matches = [&](const nlohmann::json& e) {
    return e.value("method", "") == method && e.value("sessionId", "") == session_id &&
           match(e.value("params", nlohmann::json::object()));
  };
  for (const auto& e : events_) {
    if (matches(e)) return e.value("params", nlohmann::json::object());
  }
  const auto deadline = std::chrono::steady_clock::now() + kBrowserGuard;
  while (true) {
    auto m = ReadMessage(deadline, error);
    if (!m) {
      *error = "waiting for " + method + ": " + *error;
      return std::nullopt;
    }
    if (!m->contains("method")) continue;
    events_.push_back(*m);
    if (matches(*m)) return m->value("params", nlohmann::json::object());
  }
}

std::optional<std::string> CdpSession::OpenPage(std::string* error) {
  auto target = Call("Target.createTarget", {{"url", "about:blank"}}, "", error);
  if (!target) return std::nullopt;
  auto attached = Call("Target.attachToTarget",
                       {{"targetId", (*target)["targetId"]}, {"flatten", true}}, "", error);
  if (!attached) return std::nullopt;
  return (*attached)["sessionId"].get<std::string>();
}

}  // namespace clawguard::host::testing
