// sqlite_ledger.h — the Ledger on SQLite (the embedded default engine).
//
// SqliteLedger::Open creates or migrates the schema (versioned in its own ledger_schema_version
// table, so it can share a database file with the other SQLite stores) and returns a ledger whose
// every call is one transaction; Record runs in BEGIN IMMEDIATE and applies CheckLedgerRecord to
// the rows it reads inside it, so concurrent writers — threads or processes on the same file —
// serialize: exactly one of two conflicting digests for a name+version wins, and of two deploys
// racing the lower one is refused as a rollback once the higher is in. Times come from the
// injected Clock. kStoreUnavailable when the file cannot be opened or written, or holds a newer
// schema ("upgrade clawguard"). Thread-safe (one connection behind a mutex). The Clock must
// outlive the ledger.
//
// Schema 2 moved the allowlist floor into the chain: migration 1 → 2 appends the value of the
// old side table (ledger_meta.highest_allowlist_version) as an `allowlist` row whose sha256 is
// 64 '0's (the bytes were never recorded), in the transaction that drops the side table.
#ifndef CLAWGUARD_STORE_SQLITE_SQLITE_LEDGER_H_
#define CLAWGUARD_STORE_SQLITE_SQLITE_LEDGER_H_

#include <memory>
#include <string>

#include "clawguard/clock.h"
#include "clawguard/store/ledger.h"
#include "core/mutex.h"

namespace clawguard {

namespace sqlite {
class SqliteDb;
}

class SqliteLedger final : public Ledger {
 public:
  // kLedgerSchemaVersion is the schema this build writes; a newer one on disk is refused.
  static constexpr int64_t kLedgerSchemaVersion = 2;

  static Result<std::unique_ptr<SqliteLedger>> Open(const std::string& path,
                                                    const Clock& clock = SystemClock::Instance());
  ~SqliteLedger() override;
  SqliteLedger(const SqliteLedger&) = delete;
  SqliteLedger& operator=(const SqliteLedger&) = delete;

  Result<std::vector<LedgerRow>> RowsFor(const std::string& name) override;
  using Ledger::Record;
  Result<LedgerAppend> Record(LedgerKind kind, const std::string& name, const std::string& version,
                              const std::string& sha256, const LedgerRecordRules& rules) override;
  Result<std::vector<LedgerRow>> ReadAll() override;
  Result<LedgerCheckpoint> Head() override;

 private:
  SqliteLedger(std::unique_ptr<sqlite::SqliteDb> db, const Clock& clock);
  Result<std::vector<LedgerRow>> SelectRows(const std::string* name) CLAWGUARD_REQUIRES(mu_);

  Mutex mu_;
  const std::unique_ptr<sqlite::SqliteDb> db_ CLAWGUARD_PT_GUARDED_BY(mu_);
  const Clock& clock_;
};

}  // namespace clawguard

#endif  // CLAWGUARD_STORE_SQLITE_SQLITE_LEDGER_H_
