-- pgbench_claim.sql — the reference claim for bench/multihost_bench.sh: a plain
-- `INSERT … ON CONFLICT (key) DO NOTHING` of a new idempotency record into the host's own table
-- (idem_records, same indexes), one per transaction, with a fresh 64-hex key each time. The host's
-- claim statement (PgIdempotencyStore::Claim's INSERT: a CTE for the time, bytea parameters,
-- RETURNING the record) is measured against it on the same server: the ratio is the cost of
-- the host's statement shape, not of PostgreSQL.
--
--   pgbench -n -M extended -c 8 -j 2 -T 10 -f bench/pgbench_claim.sql DB
\set k random(1, 4000000000000000000)
INSERT INTO idem_records (key, plugin, route, level, fingerprint, state, lease_until_ms, fencing_token,
                          created_ms, updated_ms)
VALUES (md5(:k::text) || md5((:k::bigint + 1)::text), 'acme-orders', 'order.created', 2, md5((:k::bigint + 2)::text),
        'in_progress', 30000, 1, 0, 0)
ON CONFLICT (key) DO NOTHING;
