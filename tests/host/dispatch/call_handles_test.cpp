// call_handles_test.cpp — CallHandles: a plugin's cg_call* names its delivery until retired, and
// nothing else ever does (a retired handle, a handle never issued, an ordinary address, null).
// The end-to-end case — a thread the plugin kept calls erp_call after the delivery — is
// PluginContractTest.ACgCallKeptPastItsDeliveryNamesNothing.
#include "host/dispatch/call_handles.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace clawguard::host {
namespace {

// Stand-in calls: cg_call is opaque here, so each is an int aliased as a cg_call.
std::shared_ptr<cg_call> FakeCall() {
  auto owner = std::make_shared<int>(0);
  return std::shared_ptr<cg_call>(owner, reinterpret_cast<cg_call*>(owner.get()));
}

TEST(CallHandlesTest, AHandleNamesItsCallUntilRetiredAndNeverAgain) {
  CallHandles handles;
  const std::shared_ptr<cg_call> a = FakeCall();
  const std::shared_ptr<cg_call> b = FakeCall();
  cg_call* ha = handles.Add(a);
  cg_call* hb = handles.Add(b);
  EXPECT_NE(ha, hb);
  EXPECT_NE(ha, a.get());  // never the address
  EXPECT_EQ(handles.Find(ha), a);
  EXPECT_EQ(handles.Find(hb), b);
  handles.Retire(ha);
  handles.Retire(ha);  // idempotent
  EXPECT_EQ(handles.Find(ha), nullptr);
  EXPECT_EQ(handles.Find(hb), b);
  cg_call* hc = handles.Add(FakeCall());
  EXPECT_NE(hc, ha);  // not reused
  EXPECT_EQ(handles.Find(ha), nullptr);
}

TEST(CallHandlesTest, AnythingElseFindsNothing) {
  CallHandles handles;
  const std::shared_ptr<cg_call> a = FakeCall();
  cg_call* h = handles.Add(a);
  EXPECT_EQ(handles.Find(nullptr), nullptr);
  EXPECT_EQ(handles.Find(a.get()), nullptr);  // the real address is no handle
  const auto value = reinterpret_cast<uintptr_t>(h);
  EXPECT_EQ(handles.Find(reinterpret_cast<cg_call*>(value + 1)), nullptr);  // never issued
  EXPECT_EQ(handles.Find(reinterpret_cast<cg_call*>(value & 0x0000FFFFFFFFFFFFull)),
            nullptr);       // untagged
  handles.Retire(nullptr);  // harmless
  handles.Retire(a.get());
  EXPECT_EQ(handles.Find(h), a);
  // The tag makes the handle a non-canonical x86-64 address: dereferencing it faults.
  const uint64_t top = static_cast<uint64_t>(value) >> 47;
  EXPECT_NE(top, 0u);
  EXPECT_NE(top, 0x1FFFFu);
}

// Handles come from the CSPRNG: no two of 4,096 live ones are within 2^20 (false alarm: ~2^-19;
// a plugin cannot walk from its own handle to another), and none is a canonical address with
// 4- or 5-level paging.
TEST(CallHandlesTest, HandlesAreUnpredictableAndNeverCanonicalAddresses) {
  CallHandles handles;
  std::vector<uint64_t> values;
  for (int i = 0; i < 4096; ++i) {
    values.push_back(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handles.Add(FakeCall()))));
  }
  std::sort(values.begin(), values.end());
  for (size_t i = 1; i < values.size(); ++i) {
    EXPECT_GT(values[i] - values[i - 1], uint64_t{1} << 20)
        << "two handles within 2^20 of each other";
  }
  for (const uint64_t v : values) {
    EXPECT_NE(v >> 47, 0u);
    EXPECT_NE(v >> 47, 0x1FFFFu);
    EXPECT_NE(v >> 56, 0u);  // 5-level paging: bits 63..56 not all equal
    EXPECT_NE(v >> 56, 0xFFu);
    EXPECT_EQ(handles.Find(reinterpret_cast<cg_call*>(v + 1)), nullptr);
    EXPECT_EQ(handles.Find(reinterpret_cast<cg_call*>(v - 1)), nullptr);
  }
}

}  // namespace
}  // namespace clawguard::host
