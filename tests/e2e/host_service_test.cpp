// host_service_test.cpp — `clawguard host` as a service manager sees it: the sd_notify messages
// of Type=notify (READY=1 with STATUS= once the plugins are loaded and the listeners bound,
// WATCHDOG=1 from the background loop, STOPPING=1 on SIGTERM) read from the test's own datagram
// socket named by $NOTIFY_SOCKET; SIGHUP, which reopens the audit log for logrotate; and
// `clawguard host --check`, which starts nothing and says
// whether the host would start and which packages it would refuse.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>
#include <vector>

#include "clawguard/unique_fd.h"
#include "support/gate.h"
#include "support/host_fixture.h"

namespace clawguard::host {
namespace {

using clawguard::testing::ReadFile;
using clawguard::testing::RunClawguard;
using clawguard::testing::WriteFile;
using testing::HostFixture;
using testing::HostFixtureOptions;

// NotifySocket is the service manager's end: a datagram socket bound at a path.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_.Reset(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    path.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
    bound_ = fd_.get() >= 0 &&
             ::bind(fd_.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  bool bound() const { return bound_; }
  const std::string& path() const { return path_; }
  // Next returns the next message, "" when none came within |timeout|.
  std::string Next(std::chrono::milliseconds timeout) {
    pollfd p{fd_.get(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) return "";
    char buf[4096];
    const ssize_t n = ::recv(fd_.get(), buf, sizeof(buf), 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }
  // WaitFor returns the first message containing |needle| within |patience| ("" if none); the
  // messages before it are appended to |seen|.
  std::string WaitFor(const std::string& needle, std::chrono::seconds patience,
                      std::vector<std::string>* seen) {
    const auto until = std::chrono::steady_clock::now() + patience;
    while (std::chrono::steady_clock::now() < until) {
      std::string m = Next(std::chrono::milliseconds(200));
      if (m.empty()) continue;
      if (m.find(needle) != std::string::npos) return m;
      seen->push_back(std::move(m));
    }
    return "";
  }

 private:
  std::string path_;
  UniqueFd fd_;
  bool bound_ = false;
};

TEST(HostServiceTest, TellsItsServiceManagerReadyWatchdogAndStopping) {
  HostFixture f;
  const std::string sock = f.dir().Sub("notify.sock");
  NotifySocket manager(sock);
  ASSERT_TRUE(manager.bound());
  HostFixtureOptions o;
  // A 1 s watchdog: the host pings every 250 ms from its background loop.
  o.extra_env = {{"NOTIFY_SOCKET", sock}, {"WATCHDOG_USEC", "1000000"}};
  ASSERT_NO_FATAL_FAILURE(f.Prepare(o));
  ASSERT_TRUE(f.StartHost());

  std::vector<std::string> before;
  const std::string ready = manager.WaitFor("READY=1", std::chrono::seconds(30), &before);
  ASSERT_NE(ready, "") << "no READY=1";
  EXPECT_NE(ready.find("STATUS=serving 1 plugin(s), 0 refused; listening on 127.0.0.1:" +
                       std::to_string(f.main_port())),
            std::string::npos)
      << ready;
  // The host was answering before it said so: a webhook delivered now is served.
  EXPECT_EQ(f.Deliver("msg_ready", HostFixture::OrderBody("ord_ready")).status, 200);
  std::vector<std::string> between;
  int pings = 0;
  for (int i = 0; i < 3; ++i) {
    if (manager.WaitFor("WATCHDOG=1", std::chrono::seconds(10), &between) != "") ++pings;
  }
  EXPECT_EQ(pings, 3) << "the background loop stopped pinging the watchdog";

  EXPECT_EQ(f.StopHost(), 0);
  std::vector<std::string> rest;
  EXPECT_NE(manager.WaitFor("STOPPING=1", std::chrono::seconds(5), &rest), "");
}

TEST(HostServiceTest, WithoutANotifySocketTheHostRunsAsBefore) {
  HostFixture f;
  ASSERT_NO_FATAL_FAILURE(f.Prepare());
  ASSERT_TRUE(f.StartHost());
  EXPECT_EQ(f.Deliver("msg_plain", HostFixture::OrderBody("ord_plain")).status, 200);
  EXPECT_EQ(f.StopHost(), 0);
}

// logrotate moves the audit log away and sends SIGHUP: the host goes on serving and writes every
// line from then on to a new file at log.audit; the moved file keeps what came before, whole.
TEST(HostServiceTest, SighupReopensTheAuditLogAndTheHostGoesOnServing) {
  HostFixture f;
  ASSERT_NO_FATAL_FAILURE(f.Prepare());
  ASSERT_TRUE(f.StartHost());
  EXPECT_EQ(f.Deliver("msg_before", HostFixture::OrderBody("ord_before")).status, 200);
  const std::string rotated = f.audit_log() + ".1";
  std::filesystem::rename(f.audit_log(), rotated);
  ASSERT_EQ(::kill(f.host_pid(), SIGHUP), 0);
  ASSERT_TRUE(clawguard::testing::WaitFor([&] {
    return std::filesystem::exists(f.audit_log()) &&
           ReadFile(f.audit_log()).find("\"audit_log_reopened\"") != std::string::npos;
  })) << "no audit_log_reopened line in a new "
      << f.audit_log();
  // A worker killed now is audited in the new file; the host serves on (a new worker).
  ASSERT_GT(testing::KillWorkersOf(f.host_pid()), 0);
  ASSERT_TRUE(clawguard::testing::WaitFor([&] {
    return ReadFile(f.audit_log()).find("\"plugin_worker_fault\"") != std::string::npos;
  })) << ReadFile(f.audit_log());
  EXPECT_EQ(f.DeliverUntilStored("msg_after", HostFixture::OrderBody("ord_after")).status, 200);
  EXPECT_EQ(f.StopHost(), 0);
  const std::string before = ReadFile(rotated);
  const std::string after = ReadFile(f.audit_log());
  EXPECT_NE(before.find("\"fd_limit\""), std::string::npos) << before;
  EXPECT_EQ(before.find("audit_log_reopened"), std::string::npos) << before;
  EXPECT_EQ(before.find("plugin_worker_fault"), std::string::npos) << before;
  EXPECT_EQ(after.find("\"fd_limit\""), std::string::npos) << after;
  for (const std::string* text : {&before, &after}) {
    size_t start = 0;
    for (size_t nl; (nl = text->find('\n', start)) != std::string::npos; start = nl + 1) {
      EXPECT_FALSE(
          nlohmann::json::parse(text->substr(start, nl - start), nullptr, false).is_discarded())
          << "a torn line: " << text->substr(start, nl - start);
    }
  }
}

TEST(HostServiceTest, CheckStartsNothingAndSaysWhatWouldLoad) {
  HostFixture f;
  ASSERT_NO_FATAL_FAILURE(f.Prepare());
  const std::string config = f.dir().Sub("host.yaml");
  auto r = RunClawguard({"host", "--check", "--config", config, "--json"}, f.env());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_TRUE(j["ok"].get<bool>());
  ASSERT_EQ(j["packages"].size(), 1u) << r.out;
  EXPECT_EQ(j["packages"][0]["verdict"], "loads");
  EXPECT_EQ(j["packages"][0]["name"], "acme-orders");
  EXPECT_EQ(j["packages"][0]["version"], "1.4.2");
  // Nothing was started or written: no store, no audit log.
  EXPECT_FALSE(std::filesystem::exists(f.db_path()));
  EXPECT_FALSE(std::filesystem::exists(f.audit_log()));

  // The same package with one byte changed beside it: the host would start and refuse it.
  std::string bytes = ReadFile(f.PluginPackage());
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x01);
  WriteFile(f.dir().Sub("plugins/acme-orders-tampered.claw"), bytes);
  r = RunClawguard({"host", "--check", "--config", config}, f.env());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("refused  " + f.dir().Sub("plugins/acme-orders-tampered.claw")),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("1 package(s) refused"), std::string::npos) << r.out;

  // A host.yaml that does not parse: the host would not start (exit 2), and it says where.
  WriteFile(config, ReadFile(config) + "listen: [\n");
  r = RunClawguard({"host", "--check", "--config", config}, f.env());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("host.yaml"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(f.db_path()));
}

// What a start refuses before it opens anything, --check refuses too (exit 2): a worker binary
// that is not there, an ERP credential with a control character (never echoed).
TEST(HostServiceTest, CheckRefusesWhatAStartWouldRefuseBeforeOpeningAnything) {
  HostFixture f;
  ASSERT_NO_FATAL_FAILURE(f.Prepare());
  const std::string config = f.dir().Sub("host.yaml");
  const std::string yaml = ReadFile(config);
  const std::string worker = "worker: " + testing::WorkerPath();
  ASSERT_NE(yaml.find(worker), std::string::npos);

  std::string missing = yaml;
  missing.replace(missing.find(worker), worker.size(),
                  "worker: " + f.dir().Sub("no-such-clawguard-worker"));
  WriteFile(config, missing);
  auto r = RunClawguard({"host", "--check", "--config", config}, f.env());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("config_invalid"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("plugins.worker"), std::string::npos) << r.err;
  // The same for a pipeline: one JSON object on stdout naming the reason.
  r = RunClawguard({"host", "--check", "--json", "--config", config}, f.env());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  const auto refusal = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(refusal.is_object()) << r.out;
  EXPECT_EQ(refusal.value("error", ""), "config_invalid") << r.out;
  EXPECT_NE(refusal.value("detail", "").find("plugins.worker"), std::string::npos) << r.out;
  // --json belongs to --check: alone it is a usage error, and nothing starts.
  r = RunClawguard({"host", "--json", "--config", config}, f.env());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--json goes with --check"), std::string::npos) << r.err;

  WriteFile(config, yaml);
  std::vector<std::pair<std::string, std::string>> env = f.env();
  for (auto& [name, value] : env) {
    if (name == "E2E_ERP") value = "Bearer e2e-erp-token-0123456789abcdef\nX-Leak: SECRETLINE";
  }
  r = RunClawguard({"host", "--check", "--config", config}, env);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("erp.auth"), std::string::npos) << r.err;
  EXPECT_EQ((r.out + r.err).find("SECRETLINE"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(f.db_path()));
}

}  // namespace
}  // namespace clawguard::host
