// store_url.h — the ledger/store URL of ARCHITECTURE.md "Commands": "sqlite:PATH" (a bare path
// means the same) or "postgresql://user@host:port/db". A URL carrying a password is refused
// (passwords come from PGPASSWORD or ~/.pgpass), and URLs are redacted in every message.
#ifndef CLAWGUARD_CLI_STORE_URL_H_
#define CLAWGUARD_CLI_STORE_URL_H_

#include <memory>
#include <string>
#include <string_view>

#include "clawguard/error.h"
#include "clawguard/store/ledger.h"

namespace clawguard::cli {

// StoreOpen says whether a missing SQLite file may be created (writers) or must exist (readers
// such as `ledger show|verify`, which should not invent an empty ledger).
enum class StoreOpen { kCreate, kMustExist };

// OpenLedger opens the ledger at |url|. kUsage for a malformed URL, an unknown scheme or one
// carrying a password (the message shows it redacted); kStoreUnavailable when the store cannot
// be opened (and, in this version, for postgresql:// — that engine is not built in yet).
Result<std::unique_ptr<Ledger>> OpenLedger(const std::string& url, StoreOpen mode = StoreOpen::kCreate);

// RedactStoreUrl renders |url| for messages: the password of the user info (and a libpq
// `password=` query parameter) become "***"; scheme, user, host, port and path are kept.
std::string RedactStoreUrl(std::string_view url);

}  // namespace clawguard::cli

#endif  // CLAWGUARD_CLI_STORE_URL_H_
