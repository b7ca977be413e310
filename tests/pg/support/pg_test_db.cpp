// pg_test_db.cpp — see pg_test_db.h.
#include "pg/support/pg_test_db.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <random>

#include "postgresql/pg_conn.h"

namespace clawguard::testing {
namespace {

const std::string kScript = std::string(CLAWGUARD_SOURCE_DIR) + "/tests/support/pg-cluster";

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// RunSql runs constant SQL on |url|; the error text, or "" when it worked.
std::string RunSql(const std::string& url, const std::string& sql) {
  auto pool = pg::PgPool::Create(url, pg::PgOptions{});
  if (!pool.ok()) return pool.error().ToString();
  auto lease = (*pool)->Acquire();
  if (!lease.ok()) return lease.error().ToString();
  Status st = lease->ExecScript("test SQL", sql);
  return st.ok() ? "" : st.ToString();
}

}  // namespace

std::string ReplaceDatabase(const std::string& url, const std::string& name) {
  return url.substr(0, url.rfind('/') + 1) + name;
}

std::string PgClusterUrl() {
  const char* state = std::getenv("CLAWGUARD_PG_STATE");
  if (state == nullptr) {
    ADD_FAILURE()
        << "CLAWGUARD_PG_STATE is not set: run this test through ctest (the pg_cluster fixture)";
    return "";
  }
  const std::string url = Trimmed(ReadFile(std::string(state) + "/url"));
  if (url.empty())
    ADD_FAILURE() << "no PostgreSQL fixture cluster: " << state
                  << "/url is missing (pg_cluster_start failed?)";
  return url;
}

PgTestDb::PgTestDb(const std::string& cluster_url) : admin_url_(cluster_url) {
  if (admin_url_.empty()) return;
  static std::atomic<int> counter{0};
  std::random_device rd;
  name_ = "cg_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" +
          std::to_string(rd() % 100000);
  const std::string err = RunSql(admin_url_, "CREATE DATABASE " + name_);
  if (!err.empty()) {
    ADD_FAILURE() << "CREATE DATABASE " << name_ << ": " << err;
    name_.clear();
    return;
  }
  url_ = ReplaceDatabase(admin_url_, name_);
}

PgTestDb::~PgTestDb() {
  if (name_.empty()) return;
  const std::string err = RunSql(admin_url_, "DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  if (!err.empty()) ADD_FAILURE() << "DROP DATABASE " << name_ << ": " << err;
}

void PgTestDb::Exec(const std::string& sql) const {
  const std::string err = RunSql(url_, sql);
  if (!err.empty()) ADD_FAILURE() << sql << ": " << err;
}

PgCluster::PgCluster() {
  const CommandResult r = RunCommand({"bash", kScript, "start", state_.path().string()});
  if (r.exit_code != 0) {
    ADD_FAILURE() << "pg-cluster start: " << r.err;
    return;
  }
  url_ = Trimmed(ReadFile(state_.Sub("url")));
}

PgCluster::~PgCluster() { (void)RunCommand({"bash", kScript, "stop", state_.path().string()}); }

bool PgCluster::Halt() {
  return RunCommand({"bash", kScript, "halt", state_.path().string()}).exit_code == 0;
}

bool PgCluster::Resume() {
  return RunCommand({"bash", kScript, "resume", state_.path().string()}).exit_code == 0;
}

}  // namespace clawguard::testing
