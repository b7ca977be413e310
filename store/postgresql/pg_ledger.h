// pg_ledger.h — the Ledger on PostgreSQL (table ledger, and ledger_meta's chain_lock row; schema
// in pg_schema.h), shared by every host and signer that points at one database.
//
// Record runs in one transaction that first locks the 'chain_lock' row of ledger_meta
// (SELECT … FOR UPDATE): appends from every process serialise there, so the hash chain stays
// linear; the recording rules (CheckLedgerRecord) are applied to the rows read after the lock,
// so exactly one of two conflicting digests for a name+version wins and, of two deploys racing,
// the lower one is refused as a rollback once the higher is in. The primary key on seq and
// UNIQUE (kind, name, version) back this up. Times: the injected clock of PgOptions or the
// database clock. Thread-safe.
#ifndef CLAWGUARD_STORE_POSTGRESQL_PG_LEDGER_H_
#define CLAWGUARD_STORE_POSTGRESQL_PG_LEDGER_H_

#include <memory>
#include <string>
#include <vector>

#include "clawguard/store/ledger.h"
#include "postgresql/pg_conn.h"

namespace clawguard::pg {

class PgLedger final : public Ledger {
 public:
  // Open migrates the database (once per pool). kStoreUnavailable when it cannot be reached or
  // holds a newer schema.
  static Result<std::unique_ptr<PgLedger>> Open(std::shared_ptr<PgPool> pool);

  Result<std::vector<LedgerRow>> RowsFor(const std::string& name) override;
  using Ledger::Record;
  Result<LedgerAppend> Record(LedgerKind kind, const std::string& name, const std::string& version,
                              const std::string& sha256, const LedgerRecordRules& rules) override;
  Result<std::vector<LedgerRow>> ReadAll() override;
  Result<LedgerCheckpoint> Head() override;

 private:
  explicit PgLedger(std::shared_ptr<PgPool> pool) : pool_(std::move(pool)) {}
  static Result<std::vector<LedgerRow>> SelectRows(PgPool::Lease& db, const std::string* name);

  const std::shared_ptr<PgPool> pool_;
};

}  // namespace clawguard::pg

#endif  // CLAWGUARD_STORE_POSTGRESQL_PG_LEDGER_H_
