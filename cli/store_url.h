// store_url.h — the ledger/store URL of ARCHITECTURE.md "Commands": "sqlite:PATH" (a bare path
// means the same) or "postgresql://user@host:port/db". A URL carrying a password is refused
// (passwords come from PGPASSWORD or ~/.pgpass), and URLs are redacted in every message.
#ifndef CLAWGUARD_CLI_STORE_URL_H_
#define CLAWGUARD_CLI_STORE_URL_H_

#include <memory>
#include <string>
#include <string_view>

#include "clawguard/clock.h"
#include "clawguard/error.h"
#include "clawguard/store/ledger.h"

namespace clawguard::pg {
class PgPool;
}

namespace clawguard::cli {

// StoreOpen says whether a missing SQLite file may be created (writers) or must exist (readers
// such as `ledger show|verify`, which should not invent an empty ledger).
enum class StoreOpen { kCreate, kMustExist };

// StoreUrl is a checked store URL.
struct StoreUrl {
  enum class Engine { kSqlite, kPostgres };
  Engine engine = Engine::kSqlite;
  std::string path;   // kSqlite: the database file
  std::string url;    // kPostgres: the URL as given (it holds no password)
  std::string shown;  // for messages (redacted)
};

// ParseStoreUrl checks |url|: kUsage for a malformed URL, an unknown scheme or one carrying a
// password (the message shows it redacted).
Result<StoreUrl> ParseStoreUrl(const std::string& url);

// OpenPgPool opens a connection pool on a kPostgres |url| (it does not connect yet). |clock| null
// means the database clock (production); a test clock must outlive the pool. kStoreUnavailable
// when this build has no PostgreSQL engine.
Result<std::shared_ptr<pg::PgPool>> OpenPgPool(const StoreUrl& url, const Clock* clock);

// OpenExistingPgStore opens a pool on the EXISTING ClawGuard database at kPostgres |url|, for
// operator commands (`idem`, `dlq`, `capability`), which never create a store: the database must
// exist (libpq never creates one) and already hold ClawGuard's schema (clawguard_schema_version,
// written by a host or `store migrate`). Otherwise kStoreUnavailable saying which; an older schema
// is migrated when the engines open, as for a host. Times come from the database clock. The
// password comes only from PGPASSWORD or ~/.pgpass (libpq reads them; the URL holds none).
Result<std::shared_ptr<pg::PgPool>> OpenExistingPgStore(const StoreUrl& url);

// OpenLedger opens the ledger at |url| (SQLite or PostgreSQL; times from |clock|, for
// PostgreSQL the database clock when |clock| is the SystemClock). kUsage as ParseStoreUrl;
// kStoreUnavailable when the store cannot be opened. kMustExist refuses a missing SQLite file
// (a PostgreSQL database must exist anyway; its schema is created or migrated at open).
Result<std::unique_ptr<Ledger>> OpenLedger(const std::string& url,
                                           StoreOpen mode = StoreOpen::kCreate,
                                           const Clock& clock = SystemClock::Instance());

// RedactStoreUrl renders |url| for messages: the password of the user info (and a libpq
// `password=` query parameter) become "***"; scheme, user, host, port and path are kept.
std::string RedactStoreUrl(std::string_view url);

}  // namespace clawguard::cli

#endif  // CLAWGUARD_CLI_STORE_URL_H_
