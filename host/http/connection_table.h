// connection_table.h — ConnectionTable: which connections a listener holds, and which idle one a
// new connection replaces when a bound is reached (HttpServer's connection limits; see
// http_server.h and ARCHITECTURE.md "Host request pipeline", connection limits).
//
// Every connection is an Entry, counted in (Admit) until it ends (Remove) or is doomed (chosen to
// be shed). An entry is idle — listed, sheddable — while no request of it is being handled, in
// one of two tiers: unproven (nothing handed on yet: handshake, first request, only refusals) and
// proven. A new connection over max_per_peer dooms the oldest idle entry of its peer, over max the
// oldest idle entry of all; unproven before proven, and within a tier the one listed earliest
// (idle longest). A busy entry (Busy) is never doomed; with nothing idle to doom the new
// connection is refused. Shedding is decided here; closing the doomed connections is the caller's.
//
// Not thread-safe: the caller holds one lock around every call (HttpServer: its state mutex).
// Entries are owned by the caller and must stay valid until Remove (or until doomed and reported).
#ifndef CLAWGUARD_HOST_HTTP_CONNECTION_TABLE_H_
#define CLAWGUARD_HOST_HTTP_CONNECTION_TABLE_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

#include "host/http/http_server.h"

namespace clawguard::host {

class ConnectionTable {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;
  struct Entry {
    void* owner = nullptr;  // the caller's object, reported when the entry is doomed
    std::string peer;       // the peer address ("127.0.0.2", "::1")
    // The table's bookkeeping; the caller only reads |doomed| (under its lock).
    bool counted = false;
    bool listed = false;
    bool doomed = false;
    int tier = 0;
    std::list<Entry*>::iterator all, mine;
  };

  // |max| ≥ 1 and 1 ≤ |max_per_peer| (values above |max| act as |max|).
  ConnectionTable(uint64_t max, uint64_t max_per_peer) : max_(max), max_per_peer_(max_per_peer) {}
  ConnectionTable(const ConnectionTable&) = delete;
  ConnectionTable& operator=(const ConnectionTable&) = delete;

  // Admit counts |e| in (listed as unproven idle, newest) after dooming what the bounds require;
  // the owners of the doomed entries are appended to |shed| (the caller closes them). false when
  // there is no room (nothing idle to doom): |e| is not counted, the caller closes it.
  bool Admit(Entry* e, std::vector<void*>* shed, SteadyTime now);
  // Busy takes |e| off the idle lists (a request of it is being handled); false if |e| was doomed
  // (the caller closes it without handling the request).
  bool Busy(Entry* e);
  // Idle lists |e| as idle: |proven| picks the tier; |first| puts it first in line to be shed (a
  // connection closing anyway), else last (just used). Nothing for a doomed or uncounted entry.
  void Idle(Entry* e, bool proven, bool first);
  // Remove counts |e| out (its connection ended). Nothing if it was doomed or never counted.
  void Remove(Entry* e);

  // Stats: the counters; |now| decides ConnectionStats::shedding.
  ConnectionStats Stats(SteadyTime now) const;

 private:
  using Tiers = std::array<std::list<Entry*>, 2>;
  struct Peer {
    uint64_t count = 0;
    Tiers idle;
  };
  static Entry* Oldest(const Tiers& tiers);
  void Unlist(Entry* e);
  // Doom counts |v| out as shed and reports its owner; |keep| is the peer whose record must stay.
  void Doom(Entry* v, const std::string& keep, std::vector<void*>* shed, SteadyTime now);

  const uint64_t max_;
  const uint64_t max_per_peer_;
  uint64_t open_ = 0;
  uint64_t shed_total_ = 0;
  uint64_t refused_total_ = 0;
  bool any_event_ = false;
  SteadyTime last_event_{};
  Tiers idle_;
  std::unordered_map<std::string, Peer> peers_;
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_HTTP_CONNECTION_TABLE_H_
