// pg_ledger.h — the Ledger on PostgreSQL (tables ledger and ledger_meta; schema in pg_schema.h),
// shared by every host and signer that points at one database.
//
// Record runs in one transaction that first locks the 'chain_lock' row of ledger_meta
// (SELECT … FOR UPDATE): appends from every process serialise there, so the hash chain stays
// linear and exactly one of two conflicting digests for a name+version wins; the primary key on
// seq and UNIQUE (kind, name, version) back this up. Times: the injected clock of PgOptions or
// the database clock. Thread-safe.
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
  Result<LedgerAppend> Record(LedgerKind kind, const std::string& name, const std::string& version,
                              const std::string& sha256) override;
  Result<std::vector<LedgerRow>> ReadAll() override;
  Result<LedgerCheckpoint> Head() override;
  Result<std::optional<int64_t>> HighestAllowlistVersion() override;
  Status NoteAllowlistVersion(int64_t version) override;

 private:
  explicit PgLedger(std::shared_ptr<PgPool> pool) : pool_(std::move(pool)) {}
  Result<std::vector<LedgerRow>> SelectRows(const std::string* name);

  const std::shared_ptr<PgPool> pool_;
};

}  // namespace clawguard::pg

#endif  // CLAWGUARD_STORE_POSTGRESQL_PG_LEDGER_H_
