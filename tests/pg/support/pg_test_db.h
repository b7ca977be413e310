// pg_test_db.h — PostgreSQL helpers for tests: the fixture cluster's URL, a database per test
// (created with a unique name, dropped at the end) and a private cluster a test may stop and
// restart (tests/support/pg-cluster). A missing server is a test failure, never a skip.
// Not thread-safe; use from the test's thread.
#ifndef CLAWGUARD_TESTS_PG_SUPPORT_PG_TEST_DB_H_
#define CLAWGUARD_TESTS_PG_SUPPORT_PG_TEST_DB_H_

#include <string>

#include "support/temp_dir.h"

namespace clawguard::testing {

// PgClusterUrl is the URL of the cluster started by the CTest fixture (pg_cluster_start writes
// it to $CLAWGUARD_PG_STATE/url); "" after an ADD_FAILURE when there is none.
std::string PgClusterUrl();

// PgTestDb is one fresh database on |cluster_url| (…/postgres).
class PgTestDb {
 public:
  explicit PgTestDb(const std::string& cluster_url = PgClusterUrl());
  ~PgTestDb();
  PgTestDb(const PgTestDb&) = delete;
  PgTestDb& operator=(const PgTestDb&) = delete;

  // url is postgresql://postgres@127.0.0.1:PORT/NAME ("" if creation failed).
  const std::string& url() const { return url_; }
  // Exec runs constant SQL on this database as the superuser (an ADD_FAILURE on error).
  void Exec(const std::string& sql) const;

 private:
  std::string admin_url_;
  std::string name_;
  std::string url_;
};

// PgCluster is a private cluster (its own data dir and port) for outage tests.
class PgCluster {
 public:
  PgCluster();   // starts it (an ADD_FAILURE if it does not start)
  ~PgCluster();  // stops it and removes its data
  PgCluster(const PgCluster&) = delete;
  PgCluster& operator=(const PgCluster&) = delete;
  const std::string& url() const { return url_; }
  bool Halt();    // stop the server, keep the data
  bool Resume();  // start it again on the same port

 private:
  TempDir state_;
  std::string url_;
};

// ReplaceDatabase returns |url| (…/db) with the database name replaced by |name|.
std::string ReplaceDatabase(const std::string& url, const std::string& name);

}  // namespace clawguard::testing

#endif  // CLAWGUARD_TESTS_PG_SUPPORT_PG_TEST_DB_H_
