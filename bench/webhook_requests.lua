-- webhook_requests.lua — wrk script for bench/host_bench.sh: sends pre-signed webhook deliveries
-- written by `clawguard-webhook gen` (one per line: id TAB timestamp TAB signature TAB body).
--
--   wrk -t T -c C -d D -s webhook_requests.lua URL -- FILE T MODE [LIMIT]
--
-- Thread i of T takes the lines whose 0-based number is ≡ i (mod T), so no two threads send the
-- same delivery. MODE "once": each delivery is sent once (first-time deliveries); a thread that
-- runs out stops and reports "exhausted" (the run is then invalid: generate more). MODE "cycle":
-- the thread cycles over its first LIMIT deliveries (replays of completed keys, or the same
-- bytes sent to nginx). done() prints one JSON line: requests, rps, p50/p99 (ms), non-2xx count,
-- socket errors, how many deliveries each thread used, and whether any thread ran out.
local threads = {}
local counter = 0

function setup(thread)
  thread:set("tid", counter)
  counter = counter + 1
  table.insert(threads, thread)
end

local reqs = {}
idx = 0
exhausted = false
local mode = "once"
local limit = 0

function init(args)
  local path, nthreads = args[1], tonumber(args[2])
  mode = args[3] or "once"
  local n = 0
  for line in io.lines(path) do
    if n % nthreads == tid then
      local id, ts, sig, body = line:match("^([^\t]+)\t([^\t]+)\t([^\t]+)\t(.*)$")
      reqs[#reqs + 1] = wrk.format("POST", nil, {
        ["Content-Type"] = "application/json",
        ["webhook-id"] = id,
        ["webhook-timestamp"] = ts,
        ["webhook-signature"] = sig,
      }, body)
    end
    n = n + 1
  end
  limit = tonumber(args[4] or "0")
  if limit <= 0 or limit > #reqs then limit = #reqs end
end

function request()
  if mode == "cycle" then
    idx = idx % limit + 1
    return reqs[idx]
  end
  idx = idx + 1
  if idx > #reqs then
    if not exhausted then
      exhausted = true
      wrk.thread:stop()
    end
    return reqs[#reqs]
  end
  return reqs[idx]
end

function done(summary, latency, requests)
  local used, any_exhausted = {}, false
  for _, t in ipairs(threads) do
    used[#used + 1] = tostring(t:get("idx"))
    if t:get("exhausted") then any_exhausted = true end
  end
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"duration_s":%.3f,"rps":%.1f,"p50_ms":%.3f,"p99_ms":%.3f,"non2xx":%d,' ..
    '"socket_errors":%d,"used":[%s],"exhausted":%s}\n',
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, e.status,
    e.connect + e.read + e.write + e.timeout, table.concat(used, ","), tostring(any_exhausted)))
end
