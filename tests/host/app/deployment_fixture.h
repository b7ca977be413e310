// deployment_fixture.h — a whole host deployment written to a temp dir for the deployment-audit
// tests: host.yaml (secrets from CG_AUDIT_* variables), trust.yaml pinning a root made here,
// allowlist.yaml (signed by a pinned signer, or not), one signed-looking package in plugins/
// whose bundle carries a leaf with a chosen expiry, a SQLite ledger with one deploy row (and
// optionally an allowlist row), the ledger anchor file beside the audit log and the audit log
// holding the same checkpoint. Certificates are made in-process (Ed25519, exact dates), so
// every expiry is relative to |now| and the findings are deterministic. Not thread-safe.
#ifndef CLAWGUARD_TESTS_AUDIT_SUPPORT_DEPLOYMENT_FIXTURE_H_
#define CLAWGUARD_TESTS_AUDIT_SUPPORT_DEPLOYMENT_FIXTURE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "host/app/host_config.h"
#include "support/temp_dir.h"

namespace clawguard::testing {

inline constexpr int64_t kDay = 86400;

// DeploymentSpec says what to write; the defaults make a deployment with no high finding.
struct DeploymentSpec {
  int64_t now = 0;                       // Unix seconds the dates are relative to
  std::string mode = "enforce";          // trust.yaml mode
  bool signed_allowlist = true;          // allowlist_signer pinned + allowlist.yaml.sig
  int64_t root_valid_days = 3650;        // root notAfter = now + this
  int64_t leaf_valid_days = 200;         // the package leaf's notAfter = now + this (may be < 0)
  int64_t allowlist_expires_days = 100;  // allowlist expires = now + this
  bool package_allowlisted = true;       // the package's sha256 in the allowlist
  bool extra_allowlist_entry = false;    // an entry with no package on disk
  int64_t secret_since_days = 10;        // current_since = now - this
  int64_t previous_until_days = 5;       // previous_until = now + this (negative: past)
  std::string admin_address = "127.0.0.1:9091";
  std::string listen_address = "127.0.0.1:8080";
  bool write_checkpoint = true;              // the audit log holds the ledger's checkpoint
  bool tamper_checkpoint = false;            // … but with another head
  bool write_anchor = true;                  // logs/ledger-anchor.json holds the ledger's head
  bool anchor_trusted_on_first_use = false;  // … marked as adopted on first use, not confirmed
  bool anchor_fifo = false;                  // a FIFO where the anchor file belongs
  bool rehash_ledger = false;        // after anchoring: the whole ledger re-hashed, other bytes
  int64_t allowlist_floor = 0;       // > 0: an allowlist row of this version (the file's is 2)
  bool anchor_in_state_dir = false;  // host.yaml log.anchor: state/ledger-anchor.json
};

class Deployment {
 public:
  explicit Deployment(const DeploymentSpec& spec);

  const std::string& host_yaml() const { return host_yaml_; }
  std::string store_path() const { return dir_.Sub("state/state.db"); }
  std::string anchor_path() const {
    return dir_.Sub(anchor_in_state_dir_ ? "state/ledger-anchor.json" : "logs/ledger-anchor.json");
  }
  // env holds the CG_AUDIT_* secrets host.yaml names.
  const std::map<std::string, std::string>& env() const { return env_; }
  std::vector<std::pair<std::string, std::string>> env_pairs() const {
    return {env_.begin(), env_.end()};
  }
  // Load parses host.yaml with env(); fails the test (and returns null) if it does not load.
  std::shared_ptr<const host::HostConfig> Load() const;
  std::string Sub(const std::string& name) const { return dir_.Sub(name); }

 private:
  TempDir dir_;
  std::string host_yaml_;
  std::map<std::string, std::string> env_;
  bool anchor_in_state_dir_ = false;
};

}  // namespace clawguard::testing

#endif  // CLAWGUARD_TESTS_AUDIT_SUPPORT_DEPLOYMENT_FIXTURE_H_
