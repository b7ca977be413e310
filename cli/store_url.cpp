// store_url.cpp — store URL parsing, redaction and engine choice for the CLI.
#include "store_url.h"

#include <sys/stat.h>

#include "sqlite/sqlite_ledger.h"
#ifdef CLAWGUARD_HAVE_POSTGRESQL
#include "postgresql/pg_conn.h"
#include "postgresql/pg_ledger.h"
#endif

namespace clawguard::cli {
namespace {

struct UrlParts {
  std::string scheme;    // "postgresql"
  std::string userinfo;  // "user" or "user:pass" ("" if none)
  std::string rest;      // "host:port/db?query"
};

// SplitUrl splits "scheme://[userinfo@]rest". The user info ends at the LAST '@' before any
// '?', so a password holding '/' or '@' is still treated (and redacted) as a password.
bool SplitUrl(std::string_view url, UrlParts& out) {
  const size_t sep = url.find("://");
  if (sep == std::string_view::npos) return false;
  out.scheme = std::string(url.substr(0, sep));
  std::string_view tail = url.substr(sep + 3);
  const std::string_view before_query = tail.substr(0, tail.find('?'));
  const size_t at = before_query.rfind('@');
  if (at != std::string_view::npos) {
    out.userinfo = std::string(tail.substr(0, at));
    tail = tail.substr(at + 1);
  }
  out.rest = std::string(tail);
  return true;
}

// RedactQuery replaces the value of every "password=" query parameter with "***".
std::string RedactQuery(const std::string& rest, bool* had_password) {
  const size_t q = rest.find('?');
  if (q == std::string::npos) return rest;
  std::string out = rest.substr(0, q + 1);
  std::string_view query = std::string_view(rest).substr(q + 1);
  bool first = true;
  while (true) {
    const size_t amp = query.find('&');
    std::string_view param = query.substr(0, amp);
    if (!first) out += '&';
    first = false;
    if (param.substr(0, 9) == "password=") {
      out += "password=***";
      if (had_password) *had_password = true;
    } else {
      out += param;
    }
    if (amp == std::string_view::npos) break;
    query = query.substr(amp + 1);
  }
  return out;
}

bool IsPostgres(const std::string& scheme) {
  return scheme == "postgresql" || scheme == "postgres";
}

}  // namespace

std::string RedactStoreUrl(std::string_view url) {
  UrlParts p;
  if (!SplitUrl(url, p)) return std::string(url);  // sqlite:PATH or a bare path: no secret
  std::string out = p.scheme + "://";
  if (!p.userinfo.empty()) {
    const size_t colon = p.userinfo.find(':');
    out += colon == std::string::npos ? p.userinfo : p.userinfo.substr(0, colon) + ":***";
    out += '@';
  }
  out += RedactQuery(p.rest, nullptr);
  return out;
}

Result<StoreUrl> ParseStoreUrl(const std::string& url) {
  if (url.empty())
    return Status(
        Reason::kUsage,
        "expected a store URL (sqlite:PATH or postgresql://user@host:port/db), found \"\"");
  UrlParts p;
  StoreUrl out;
  if (SplitUrl(url, p)) {
    out.shown = RedactStoreUrl(url);
    bool query_password = false;
    (void)RedactQuery(p.rest, &query_password);
    if (p.userinfo.find(':') != std::string::npos || query_password) {
      return Status(
          Reason::kUsage,
          "store URL " + out.shown +
              " carries a password: give it through PGPASSWORD or ~/.pgpass, never in the URL");
    }
    if (IsPostgres(p.scheme)) {
      out.engine = StoreUrl::Engine::kPostgres;
      out.url = url;
      return out;
    }
    return Status(Reason::kUsage,
                  "store URL " + out.shown +
                      ": expected sqlite:PATH, a file path or postgresql://user@host:port/db");
  }
  out.path = url;
  if (url.rfind("sqlite:", 0) == 0) {
    out.path = url.substr(7);
  } else if (url.rfind("postgresql:", 0) == 0 || url.rfind("postgres:", 0) == 0) {
    return Status(Reason::kUsage,
                  "store URL " + RedactStoreUrl(url) + ": expected postgresql://user@host:port/db");
  }
  if (out.path.empty())
    return Status(Reason::kUsage, "store URL \"" + url + "\": expected a file path after sqlite:");
  out.shown = url;
  return out;
}

Result<std::shared_ptr<pg::PgPool>> OpenPgPool(const StoreUrl& url, const Clock* clock) {
#ifdef CLAWGUARD_HAVE_POSTGRESQL
  pg::PgOptions options;
  options.clock = clock;
  return pg::PgPool::Create(url.url, options);
#else
  (void)clock;
  return Status(Reason::kStoreUnavailable,
                "cannot open " + url.shown + ": this build has no PostgreSQL engine");
#endif
}

Result<std::shared_ptr<pg::PgPool>> OpenExistingPgStore(const StoreUrl& url) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::shared_ptr<pg::PgPool> pool, OpenPgPool(url, /*clock=*/nullptr));
#ifdef CLAWGUARD_HAVE_POSTGRESQL
  // Connecting already fails for a missing database ("database … does not exist").
  CLAWGUARD_ASSIGN_OR_RETURN(pg::PgPool::Lease lease, pool->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(pg::PgResult r,
                             lease.Exec("schema check",
                                        "SELECT to_regclass('clawguard_schema_version') "
                                        "IS NOT NULL"));
  if (r.rows() != 1 || r.Text(0, 0) != "t") {
    return Status(Reason::kStoreUnavailable,
                  "no ClawGuard store in " + url.shown +
                      ": the database exists but holds no ClawGuard schema (expected the "
                      "database a host uses; `clawguard store migrate` creates one)");
  }
#endif
  return pool;
}

Result<std::unique_ptr<Ledger>> OpenLedger(const std::string& url, StoreOpen mode,
                                           const Clock& clock) {
  CLAWGUARD_ASSIGN_OR_RETURN(StoreUrl parsed, ParseStoreUrl(url));
  if (parsed.engine == StoreUrl::Engine::kPostgres) {
#ifdef CLAWGUARD_HAVE_POSTGRESQL
    const Clock* injected = &clock == &SystemClock::Instance() ? nullptr : &clock;
    CLAWGUARD_ASSIGN_OR_RETURN(std::shared_ptr<pg::PgPool> pool, OpenPgPool(parsed, injected));
    CLAWGUARD_ASSIGN_OR_RETURN(std::unique_ptr<pg::PgLedger> ledger,
                               pg::PgLedger::Open(std::move(pool)));
    return std::unique_ptr<Ledger>(std::move(ledger));
#else
    return OpenPgPool(parsed, nullptr).error();
#endif
  }
  if (mode == StoreOpen::kMustExist) {
    struct stat st {};
    if (::stat(parsed.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      return Status(Reason::kStoreUnavailable,
                    "no ledger at '" + parsed.path + "': expected an existing SQLite file");
    }
  }
  CLAWGUARD_ASSIGN_OR_RETURN(std::unique_ptr<SqliteLedger> ledger,
                             SqliteLedger::Open(parsed.path, clock));
  return std::unique_ptr<Ledger>(std::move(ledger));
}

}  // namespace clawguard::cli
