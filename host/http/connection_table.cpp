// connection_table.cpp — see connection_table.h.
#include "host/http/connection_table.h"

#include <algorithm>

namespace clawguard::host {

ConnectionTable::Entry* ConnectionTable::Oldest(const Tiers& tiers) {
  for (const auto& tier : tiers) {
    if (!tier.empty()) return tier.front();
  }
  return nullptr;
}

void ConnectionTable::Unlist(Entry* e) {
  if (!e->listed) return;
  idle_[static_cast<size_t>(e->tier)].erase(e->all);
  peers_[e->peer].idle[static_cast<size_t>(e->tier)].erase(e->mine);
  e->listed = false;
}

void ConnectionTable::Doom(Entry* v, const std::string& keep, std::vector<void*>* shed,
                           SteadyTime now) {
  Unlist(v);
  v->counted = false;
  v->doomed = true;
  --open_;
  const auto it = peers_.find(v->peer);
  if (it != peers_.end() && --it->second.count == 0 && v->peer != keep) peers_.erase(it);
  ++shed_total_;
  any_event_ = true;
  last_event_ = now;
  shed->push_back(v->owner);
}

bool ConnectionTable::Admit(Entry* e, std::vector<void*>* shed, SteadyTime now) {
  const uint64_t per_peer = std::min(max_per_peer_, max_);
  Peer& peer = peers_[e->peer];
  const auto refuse = [&] {
    ++refused_total_;
    any_event_ = true;
    last_event_ = now;
    if (peer.count == 0) peers_.erase(e->peer);
    return false;
  };
  if (peer.count >= per_peer) {
    Entry* victim = Oldest(peer.idle);
    if (victim == nullptr) return refuse();
    Doom(victim, e->peer, shed, now);
  }
  if (open_ >= max_) {
    Entry* victim = Oldest(idle_);
    if (victim == nullptr) return refuse();
    Doom(victim, e->peer, shed, now);
  }
  ++open_;
  ++peer.count;
  e->counted = true;
  e->doomed = false;
  Idle(e, /*proven=*/false, /*first=*/false);
  return true;
}

bool ConnectionTable::Busy(Entry* e) {
  if (e->doomed) return false;
  Unlist(e);
  return true;
}

void ConnectionTable::Idle(Entry* e, bool proven, bool first) {
  if (!e->counted || e->doomed) return;
  Unlist(e);
  e->tier = proven ? 1 : 0;
  auto& all = idle_[static_cast<size_t>(e->tier)];
  auto& mine = peers_[e->peer].idle[static_cast<size_t>(e->tier)];
  e->all = first ? all.insert(all.begin(), e) : all.insert(all.end(), e);
  e->mine = first ? mine.insert(mine.begin(), e) : mine.insert(mine.end(), e);
  e->listed = true;
}

void ConnectionTable::Remove(Entry* e) {
  if (!e->counted) return;
  Unlist(e);
  e->counted = false;
  --open_;
  const auto it = peers_.find(e->peer);
  if (it != peers_.end() && --it->second.count == 0) peers_.erase(it);
}

ConnectionStats ConnectionTable::Stats(SteadyTime now) const {
  ConnectionStats s;
  s.open = open_;
  s.max_connections = max_;
  s.max_connections_per_peer = std::min(max_per_peer_, max_);
  s.peers = peers_.size();
  s.shed_total = shed_total_;
  s.refused_total = refused_total_;
  s.shedding = any_event_ && now - last_event_ < kSheddingWindow;
  return s;
}

}  // namespace clawguard::host
