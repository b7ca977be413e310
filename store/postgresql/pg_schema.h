// pg_schema.h — the PostgreSQL engine's versioned schema: one migration list for every
// PostgreSQL store (idempotency records, generation, outbox, ledger), tracked in
// clawguard_schema_version. Applied at open (PgPool::EnsureMigrated) and by
// `clawguard store migrate`. Concurrent migrators (hosts starting together) serialise on a
// transaction-level advisory lock; each migration commits with its version row or not at all.
#ifndef CLAWGUARD_STORE_POSTGRESQL_PG_SCHEMA_H_
#define CLAWGUARD_STORE_POSTGRESQL_PG_SCHEMA_H_

#include <cstdint>
#include <vector>

#include "clawguard/error.h"

namespace clawguard::pg {

class PgPool;

// kPgSchemaVersion is the schema this build writes; a newer one in the database is refused.
inline constexpr int64_t kPgSchemaVersion = 5;

struct MigrationReport {
  int64_t from = 0;              // the version found
  int64_t to = 0;                // the version after the call
  std::vector<int64_t> applied;  // versions applied by this call (empty: already current)
};

// MigrateSchema brings the database to kPgSchemaVersion. kStoreUnavailable when the server
// cannot be reached or holds a newer schema (the message says which versions).
Result<MigrationReport> MigrateSchema(PgPool& pool);

}  // namespace clawguard::pg

#endif  // CLAWGUARD_STORE_POSTGRESQL_PG_SCHEMA_H_
