// pg_conn.h — the PostgreSQL engine's plumbing: RAII owners of libpq handles (PgResult, the
// pooled PGconn), parameter lists for PQexecParams, and PgPool, a small bounded connection pool
// shared by every PostgreSQL store of one URL.
//
// Every statement with values goes through PQexecParams with the values as parameters (never
// spliced into SQL text); bytea parameters are sent in binary format. Failures are
// kStoreUnavailable with the URL (it never carries a password: PgPool::Create refuses one) and
// the server's primary message. A connection that broke is closed, and every idle connection is
// dropped with it (they point at the same server, which most likely restarted), so the next
// call connects afresh: the pool recovers by itself after an outage. PgPool is thread-safe; a
// Lease (one checked-out connection) is used by one thread at a time.
#ifndef CLAWGUARD_STORE_POSTGRESQL_PG_CONN_H_
#define CLAWGUARD_STORE_POSTGRESQL_PG_CONN_H_

#include <libpq-fe.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clawguard/clock.h"
#include "clawguard/error.h"

namespace clawguard::pg {

// PgOptions configure a pool. WARNING: |clock| null means the database clock
// (clock_timestamp() on the server, so every host agrees) — that is the production setting;
// tests inject a FixedClock. A non-null clock must outlive the pool.
struct PgOptions {
  const Clock* clock = nullptr;
  int max_connections = 8;              // 1..64
  int connect_timeout_s = 5;            // libpq connect_timeout
  int64_t acquire_timeout_ms = 10'000;  // waiting for a free connection when all are busy
};

// PgResult owns one PGresult (cleared on destruction; move-only). Column accessors read the
// text format; Bytes decodes a bytea column.
class PgResult {
 public:
  explicit PgResult(PGresult* r) : r_(r) {}
  PgResult(PgResult&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  PgResult& operator=(PgResult&&) = delete;
  PgResult(const PgResult&) = delete;
  ~PgResult();

  int rows() const { return PQntuples(r_); }
  bool IsNull(int row, int col) const { return PQgetisnull(r_, row, col) == 1; }
  std::string Text(int row, int col) const;
  int64_t Int(int row, int col) const;
  std::string Bytes(int row, int col) const;
  // Affected is the row count of an INSERT/UPDATE/DELETE.
  int64_t Affected() const;
  const PGresult* raw() const { return r_; }

 private:
  PGresult* r_;
};

// PgParams is the parameter list of one statement ($1, $2, … in the order added).
class PgParams {
 public:
  PgParams& Int(int64_t v);
  PgParams& Text(std::string_view v);   // text format; must be valid UTF-8 without NUL
  PgParams& Bytes(std::string_view v);  // binary format (for bytea)
  PgParams& Null();
  // OptionalInt adds |v| or NULL.
  PgParams& OptionalInt(const std::optional<int64_t>& v) { return v ? Int(*v) : Null(); }

 private:
  friend class PgPool;
  std::vector<std::string> values_;
  std::vector<bool> null_;
  std::vector<int> formats_;
};

class PgPool : public std::enable_shared_from_this<PgPool> {
 public:
  // Create checks |url| (a libpq URI or key=value string; a password in it is kUsage) and
  // |options|; it does not connect yet.
  static Result<std::shared_ptr<PgPool>> Create(const std::string& url, const PgOptions& options);
  ~PgPool();
  PgPool(const PgPool&) = delete;
  PgPool& operator=(const PgPool&) = delete;

  // Lease is one checked-out connection, returned to the pool on destruction (closed instead if
  // it broke or was left inside a transaction). Move-only.
  class Lease {
   public:
    Lease(Lease&& o) noexcept : pool_(o.pool_), conn_(o.conn_) { o.conn_ = nullptr; }
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    ~Lease();
    // Exec runs one parameterised statement; |what| names it in errors.
    Result<PgResult> Exec(std::string_view what, const std::string& sql,
                          const PgParams& params = PgParams());
    // ExecScript runs constant SQL text that may hold several statements and no values.
    Status ExecScript(std::string_view what, const std::string& sql);

   private:
    friend class PgPool;
    Lease(PgPool* pool, PGconn* conn) : pool_(pool), conn_(conn) {}
    Status Check(std::string_view what, const PgResult& r) const;
    PgPool* pool_;
    PGconn* conn_;
  };

  // Acquire checks out a connection (connecting if none is idle and fewer than max are open;
  // waiting up to acquire_timeout_ms otherwise). kStoreUnavailable when the server cannot be
  // reached.
  Result<Lease> Acquire();

  // NowParam is the value for a `COALESCE($n::bigint, cg_now_ms())` parameter: the injected
  // clock's time, or nullopt (NULL) to let the database clock decide.
  std::optional<int64_t> NowParam() const;
  // shown_url is the URL for messages (it holds no password).
  const std::string& shown_url() const { return url_; }
  // Unavailable renders a kStoreUnavailable with the URL.
  Status Unavailable(std::string_view what, std::string_view detail) const;

  // EnsureMigrated runs the schema migrations once per pool (see pg_schema.h).
  Status EnsureMigrated();

 private:
  // State is the idle connections, their count and the migration flag behind their locks. It is
  // defined in pg_conn.cpp, where the lock annotations are checked, so that this header (which is
  // installed) needs no in-tree lock header.
  struct State;
  PgPool(std::string url, PgOptions options);
  Result<PGconn*> Connect();
  void Return(PGconn* conn, bool broken);

  const std::string url_;
  const PgOptions options_;
  const std::unique_ptr<State> state_;
};

// PgTx is BEGIN … COMMIT on one lease: it rolls back on destruction unless Commit succeeded.
class PgTx {
 public:
  static Result<PgTx> Begin(PgPool::Lease& lease);
  PgTx(PgTx&& o) noexcept : lease_(o.lease_), open_(o.open_) { o.open_ = false; }
  PgTx& operator=(PgTx&&) = delete;
  ~PgTx();
  Status Commit();

 private:
  explicit PgTx(PgPool::Lease* lease) : lease_(lease), open_(true) {}
  PgPool::Lease* lease_;
  bool open_;
};

}  // namespace clawguard::pg

#endif  // CLAWGUARD_STORE_POSTGRESQL_PG_CONN_H_
