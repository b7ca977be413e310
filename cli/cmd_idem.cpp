// cmd_idem.cpp — `clawguard idem show|reset|confirm KEY --store URL [--json] [--audit-log FILE]`
// (ARCHITECTURE.md "Commands", step 3 level 3 and "Operator commands write to the store").
//
//   show     prints the idempotency record of KEY and its outbox rows. Never a secret: the ERP
//            credentials are never stored; outbox request bodies are shown as sha256 and size.
//   reset    IdempotencyStore::Reset: clears the stored answer and fingerprint, ends the lease,
//            keeps the fencing token, bumps the operations generation.
//   confirm  Outbox::ConfirmHeld (held level-3 intents become pending, due now) and, if any row
//            changed, IdempotencyStore::BumpGeneration; a running host's retry worker sends them.
//            A second confirm finds nothing held: a no-op (exit 0, "0 intents").
// Every reset and confirm is audited: one JSON line {"event":"operator_action", ...} appended to
// --audit-log FILE (the host's log.audit; fsync'd) — or, without it, written to stderr. If the
// audit log cannot be opened the action is refused before the store is touched (fail closed).
// A reset or confirm that changed something is also recorded in the store's operator_actions
// ("idem.reset", "idem.confirm"; `dlq`/`capability` record theirs there too).
// The store is sqlite:PATH or postgresql://user@host:port/db, and must exist (ops_store.h).
// Exit codes: 0 done, 1 no record for KEY (not_found), 2 usage or store errors.
#include <fcntl.h>
#include <unistd.h>

#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "clawguard/clock.h"
#include "clawguard/encoding.h"
#include "clawguard/json_dump.h"
#include "clawguard/store/idempotency_store.h"
#include "clawguard/store/outbox.h"
#include "commands.h"
#include "ops_store.h"
#include "store_url.h"

namespace clawguard::cli {
namespace {

struct IdemOptions {
  std::string key;
  std::string store;
  std::string audit_log;
  bool json = false;
};

Status CheckKey(const std::string& key) {
  if (IsLowerHex(key, 64)) return Status::Ok();
  return Status(Reason::kUsage,
                "KEY: expected the event key, 64 lowercase hex characters, found \"" +
                    key.substr(0, 80) + "\"");
}

// OperatorAudit appends one audit line for an operator action.
class OperatorAudit {
 public:
  static Result<OperatorAudit> Open(const std::string& path) {
    if (path.empty()) return OperatorAudit(-1);
    const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0)
      return Status(Reason::kFileUnreadable,
                    "--audit-log: cannot open '" + path + "' for appending");
    return OperatorAudit(fd);
  }
  OperatorAudit(OperatorAudit&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  OperatorAudit& operator=(OperatorAudit&&) = delete;
  ~OperatorAudit() {
    if (fd_ >= 0) ::close(fd_);
  }
  void Write(nlohmann::json j) {
    j["event"] = "operator_action";
    j["time"] = FormatRfc3339Utc(SystemClock::Instance().NowSeconds());
    j["uid"] = static_cast<int64_t>(::getuid());
    const std::string line = DumpJson(j) + "\n";
    if (fd_ < 0) {
      std::cerr << line;
      return;
    }
    if (::write(fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size()) ||
        ::fsync(fd_) != 0) {
      std::cerr << "clawguard idem: warning: the audit line could not be written in full: " << line;
    }
  }

 private:
  explicit OperatorAudit(int fd) : fd_(fd) {}
  int fd_;
};

// RecordAction adds an accepted change to the store's operator_actions.
Status RecordAction(OpsStore& store, const std::string& action, const std::string& key,
                    const std::string& detail) {
  const Status s = store.dlq->RecordOperatorAction(OperatorActor(), action, key, detail);
  return s.ok() ? s : s.WithContext("the change was written, but not recorded in operator_actions");
}

nlohmann::json RecordJson(const IdempotencyRecord& r) {
  return {{"key", r.key},
          {"plugin", r.plugin},
          {"route", r.route},
          {"level", r.level},
          {"fingerprint", r.fingerprint},
          {"state", std::string(IdemStateName(r.state))},
          {"lease_until_ms", r.lease_until_ms},
          {"fencing_token", r.fencing_token},
          {"status", r.status},
          {"content_type", r.content_type},
          {"body", r.body},
          {"created_ms", r.created_ms},
          {"updated_ms", r.updated_ms},
          {"webhook_id", r.webhook_id},
          {"x_idempotency_key", r.x_idempotency_key}};
}

nlohmann::json RowJson(const OutboxRow& r) {
  return {{"call_index", r.call_index},
          {"method", r.method},
          {"path", r.path},
          {"state", std::string(OutboxStateName(r.state))},
          {"body_sha256", r.body_sha256},
          {"body_size", r.body.size()},
          {"reply_status", r.reply_status},
          {"attempts", r.attempts},
          {"next_attempt_ms", r.next_attempt_ms},
          {"fencing_token", r.fencing_token},
          {"idempotency_key", r.idempotency_key}};
}

int RunShow(const IdemOptions& o) {
  if (Status s = CheckKey(o.key); !s.ok()) return ReportError("idem show", s, o.json);
  auto stores = OpenOpsStore(o.store);
  if (!stores.ok()) return ReportError("idem show", stores.error(), o.json);
  auto record = stores->idem->Get(o.key);
  if (!record.ok()) return ReportError("idem show", record.error(), o.json);
  if (!record->has_value()) {
    return ReportError("idem show",
                       Status(Reason::kNotFound, "no idempotency record for key " + o.key), o.json);
  }
  auto rows = stores->outbox->ListEvent(o.key);
  if (!rows.ok()) return ReportError("idem show", rows.error(), o.json);
  if (o.json) {
    nlohmann::json j = {{"record", RecordJson(**record)}, {"outbox", nlohmann::json::array()}};
    for (const OutboxRow& r : *rows) j["outbox"].push_back(RowJson(r));
    std::cout << DumpJson(j) << "\n";
    return 0;
  }
  const IdempotencyRecord& r = **record;
  std::cout << "key          " << r.key << "\nplugin/route " << r.plugin << "/" << r.route
            << "\nlevel        " << r.level << "\nstate        " << IdemStateName(r.state)
            << "\nfencing      " << r.fencing_token << "\nwebhook-id   " << r.webhook_id << "\n";
  if (r.state == IdemState::kCompleted)
    std::cout << "answer       " << r.status << " " << r.content_type << "\n";
  std::cout << "outbox       " << rows->size() << " rows\n";
  for (const OutboxRow& row : *rows) {
    std::cout << "  " << row.call_index << '\t' << OutboxStateName(row.state) << '\t' << row.method
              << ' ' << row.path << "\tattempts " << row.attempts << "\treply " << row.reply_status
              << "\tkey " << row.idempotency_key << '\n';
  }
  return 0;
}

int RunReset(const IdemOptions& o) {
  if (Status s = CheckKey(o.key); !s.ok()) return ReportError("idem reset", s, o.json);
  auto audit = OperatorAudit::Open(o.audit_log);
  if (!audit.ok()) return ReportError("idem reset", audit.error(), o.json);
  auto stores = OpenOpsStore(o.store);
  if (!stores.ok()) return ReportError("idem reset", stores.error(), o.json);
  auto reset = stores->idem->Reset(o.key);
  nlohmann::json line = {
      {"action", "idem_reset"}, {"key", o.key}, {"store", RedactStoreUrl(o.store)}};
  if (!reset.ok()) {
    line["result"] = "error";
    line["detail"] = reset.error().message();
    audit->Write(line);
    return ReportError("idem reset", reset.error(), o.json);
  }
  line["result"] = *reset ? "reset" : "not_found";
  audit->Write(line);
  if (!*reset) {
    return ReportError("idem reset",
                       Status(Reason::kNotFound, "no idempotency record for key " + o.key), o.json);
  }
  if (Status rec = RecordAction(*stores, "idem.reset", o.key, ""); !rec.ok()) {
    return ReportError("idem reset", rec, o.json);
  }
  if (o.json) {
    std::cout << DumpJson({{"key", o.key}, {"result", "reset"}}) << "\n";
  } else {
    std::cout << "reset " << o.key << ": the next delivery runs the plugin again\n";
  }
  return 0;
}

int RunConfirm(const IdemOptions& o) {
  if (Status s = CheckKey(o.key); !s.ok()) return ReportError("idem confirm", s, o.json);
  auto audit = OperatorAudit::Open(o.audit_log);
  if (!audit.ok()) return ReportError("idem confirm", audit.error(), o.json);
  auto stores = OpenOpsStore(o.store);
  if (!stores.ok()) return ReportError("idem confirm", stores.error(), o.json);
  nlohmann::json line = {
      {"action", "idem_confirm"}, {"key", o.key}, {"store", RedactStoreUrl(o.store)}};
  auto record = stores->idem->Get(o.key);
  if (!record.ok() || !record->has_value()) {
    const Status s = !record.ok()
                         ? record.error()
                         : Status(Reason::kNotFound, "no idempotency record for key " + o.key);
    line["result"] = !record.ok() ? "error" : "not_found";
    audit->Write(line);
    return ReportError("idem confirm", s, o.json);
  }
  auto confirmed = stores->outbox->ConfirmHeld(o.key, SystemClock::Instance().NowMillis());
  if (confirmed.ok() && *confirmed > 0) {
    if (auto bumped = stores->idem->BumpGeneration(); !bumped.ok()) confirmed = bumped.error();
  }
  if (!confirmed.ok()) {
    line["result"] = "error";
    line["detail"] = confirmed.error().message();
    audit->Write(line);
    return ReportError("idem confirm", confirmed.error(), o.json);
  }
  line["result"] = *confirmed > 0 ? "confirmed" : "nothing_held";
  line["intents"] = *confirmed;
  audit->Write(line);
  if (*confirmed > 0) {
    if (Status rec =
            RecordAction(*stores, "idem.confirm", o.key, std::to_string(*confirmed) + " intents");
        !rec.ok()) {
      return ReportError("idem confirm", rec, o.json);
    }
  }
  if (o.json) {
    std::cout << DumpJson({{"key", o.key}, {"confirmed", *confirmed}}) << "\n";
  } else if (*confirmed > 0) {
    std::cout << "confirmed " << *confirmed << " intents of " << o.key
              << ": a running host sends them\n";
  } else {
    std::cout << "0 intents held for " << o.key << ": nothing to confirm\n";
  }
  return 0;
}

}  // namespace

void RegisterIdem(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<IdemOptions>();
  auto* cmd = app.add_subcommand("idem", "show, reset or confirm an idempotency record");
  cmd->require_subcommand(1);
  const auto common = [opts](CLI::App* sub) {
    sub->add_option("KEY", opts->key, "the event key (64 lowercase hex)")->required();
    sub->add_option("--store", opts->store,
                    "the host's store: sqlite:PATH, a path, or postgresql://user@host:port/db")
        ->required();
    sub->add_flag("--json", opts->json, "print one JSON object");
  };
  auto* show = cmd->add_subcommand("show", "print the record and its outbox rows");
  common(show);
  show->callback([&ctx, opts] { ctx.exit_code = RunShow(*opts); });
  auto* reset =
      cmd->add_subcommand("reset", "clear the stored answer so the next delivery runs again");
  common(reset);
  reset->add_option("--audit-log", opts->audit_log,
                    "append the operator_action line here (else stderr)");
  reset->callback([&ctx, opts] { ctx.exit_code = RunReset(*opts); });
  auto* confirm =
      cmd->add_subcommand("confirm", "confirm the held level-3 intents: a running host sends them");
  common(confirm);
  confirm->add_option("--audit-log", opts->audit_log,
                      "append the operator_action line here (else stderr)");
  confirm->callback([&ctx, opts] { ctx.exit_code = RunConfirm(*opts); });
}

}  // namespace clawguard::cli
