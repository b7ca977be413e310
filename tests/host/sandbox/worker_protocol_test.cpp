// worker_protocol_test.cpp — the frames between the host and a plugin worker
// (host/sandbox/worker_protocol.h): every message round-trips; the decoder refuses an oversized
// frame from its header alone, a reserved field, a type the side never expects; a payload that is
// short, long, or whose field lengths run past its end decodes to nothing; frames fed a byte at a
// time come out whole.
#include "host/sandbox/worker_protocol.h"

#include <gtest/gtest.h>

namespace clawguard::sandbox {
namespace {

const std::vector<FrameType> kFromWorker = {FrameType::kReady,   FrameType::kInitFailed,
                                            FrameType::kErpCall, FrameType::kRespond,
                                            FrameType::kLog,     FrameType::kDone};

TEST(WorkerProtocolTest, EveryMessageRoundTrips) {
  DeliverMsg d{"order.created", "POST",   "/webhooks/x", std::string("b\0dy", 4), "k",
               {"webhook-id"},  {"msg_1"}};
  auto d2 = DeliverMsg::Decode(d.Encode());
  ASSERT_TRUE(d2);
  EXPECT_EQ(d2->body, d.body);
  EXPECT_EQ(d2->values, d.values);
  auto r = ErpReplyMsg::Decode(ErpReplyMsg{-7, "reply"}.Encode());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result, -7);
  EXPECT_EQ(r->reply, "reply");
  auto c = ErpCallMsg::Decode(ErpCallMsg{"POST", "/orders/1/fulfil", "{}"}.Encode());
  ASSERT_TRUE(c);
  EXPECT_EQ(c->path, "/orders/1/fulfil");
  auto a = RespondMsg::Decode(RespondMsg{201, "application/json", "{}"}.Encode());
  ASSERT_TRUE(a);
  EXPECT_EQ(a->status, 201);
  auto l = LogMsg::Decode(LogMsg{2, "hello"}.Encode());
  ASSERT_TRUE(l);
  EXPECT_EQ(l->message, "hello");
  auto done = DoneMsg::Decode(DoneMsg{-1}.Encode());
  ASSERT_TRUE(done);
  EXPECT_EQ(done->rc, -1);
  auto ready = ReadyMsg::Decode(ReadyMsg{1, 1}.Encode());
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->flags, 1u);
  auto failed = InitFailedMsg::Decode(InitFailedMsg{"load_failed", "init returned 3"}.Encode());
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->detail, "init returned 3");
}

TEST(WorkerProtocolTest, TheLargestHonestMessageOfEachTypeFitsItsBound) {
  // The largest fields each decoder accepts: the host's per-type bound refuses nothing larger than
  // what decodes, and nothing the worker's API produces.
  const std::string name(4096, 'n'), path(64 * 1024, 'p');
  ErpCallMsg call{name, path, std::string(limits::kMaxErpRequestBody, 'b')};
  EXPECT_EQ(call.Encode().size(), MaxWorkerPayload(FrameType::kErpCall));
  RespondMsg answer{200, name, std::string(kMaxWorkerAnswer, 'a')};
  EXPECT_EQ(answer.Encode().size(), MaxWorkerPayload(FrameType::kRespond));
  RespondMsg later{200, name, ""};
  EXPECT_EQ(later.Encode().size(), MaxLaterRespondPayload());
  EXPECT_EQ((LogMsg{1, std::string(4096, 'l')}).Encode().size(), MaxWorkerPayload(FrameType::kLog));
  EXPECT_EQ((DoneMsg{0}).Encode().size(), MaxWorkerPayload(FrameType::kDone));
  EXPECT_EQ((ReadyMsg{1, 0}).Encode().size(), MaxWorkerPayload(FrameType::kReady));
  EXPECT_EQ((InitFailedMsg{std::string(64, 'r'), std::string(4096, 'd')}).Encode().size(),
            MaxWorkerPayload(FrameType::kInitFailed));
  EXPECT_EQ(MaxWorkerPayload(FrameType::kDeliver), 0u);  // the host's, never a worker's
  for (FrameType t : {FrameType::kErpCall, FrameType::kRespond, FrameType::kLog}) {
    EXPECT_LE(MaxWorkerPayload(t), kMaxWorkerFrame);
  }
}

TEST(WorkerProtocolTest, AFrameLongerThanItsTypeAllowsIsRefusedFromItsHeader) {
  FrameDecoder d(kMaxWorkerFrame, {FrameType::kLog, FrameType::kRespond}, &MaxWorkerPayload);
  std::string header = EncodeFrame(FrameType::kLog, 1, std::string(5000, 'l')).substr(0, 16);
  d.Feed(header);  // the header alone: the payload never comes
  EXPECT_FALSE(d.Next());
  EXPECT_EQ(d.error(), "a frame of type 20 of 5000 bytes (at most 4104 expected)");
  FrameDecoder answers(kMaxWorkerFrame, {FrameType::kRespond}, &MaxWorkerPayload);
  answers.Feed(EncodeFrame(FrameType::kRespond, 1, RespondMsg{200, "", "x"}.Encode()));
  EXPECT_TRUE(answers.Next());
  EXPECT_EQ(answers.error(), "");
}

TEST(WorkerProtocolTest, AFrameLongerThanTheLimitIsRefusedFromItsHeader) {
  FrameDecoder dec(1024, kFromWorker);
  std::string frame = EncodeFrame(FrameType::kLog, 1, std::string(2000, 'x'));
  dec.Feed(frame.substr(0, kFrameHeaderBytes));  // the header alone is enough to refuse it
  EXPECT_FALSE(dec.Next());
  EXPECT_NE(dec.error().find("2000 bytes"), std::string::npos) << dec.error();
  dec.Feed(EncodeFrame(FrameType::kDone, 1, DoneMsg{0}.Encode()));
  EXPECT_FALSE(dec.Next()) << "a decoder that failed stays failed";
}

TEST(WorkerProtocolTest, AReservedFieldOrAnUnexpectedTypeIsRefused) {
  {
    FrameDecoder dec(1024, kFromWorker);
    std::string frame = EncodeFrame(FrameType::kDone, 1, DoneMsg{0}.Encode());
    frame[6] = 1;  // the zero field
    dec.Feed(frame);
    EXPECT_FALSE(dec.Next());
    EXPECT_FALSE(dec.error().empty());
  }
  {
    FrameDecoder dec(1024, kFromWorker);
    dec.Feed(EncodeFrame(FrameType::kDeliver, 1, ""));  // host → worker only
    EXPECT_FALSE(dec.Next());
    EXPECT_NE(dec.error().find("never expects"), std::string::npos) << dec.error();
  }
}

TEST(WorkerProtocolTest, MalformedPayloadsDecodeToNothing) {
  const std::string ok = ErpCallMsg{"POST", "/p", "{}"}.Encode();
  EXPECT_FALSE(ErpCallMsg::Decode(ok.substr(0, ok.size() - 1)));  // short
  EXPECT_FALSE(ErpCallMsg::Decode(ok + "x"));                     // trailing bytes
  std::string huge = ok;
  huge[0] = '\xff';  // method length 255+ runs past the end
  huge[3] = '\x7f';
  EXPECT_FALSE(ErpCallMsg::Decode(huge));
  EXPECT_FALSE(DoneMsg::Decode(""));
  // A delivery with more headers than a plugin is ever shown.
  DeliverMsg d;
  for (size_t i = 0; i <= kMaxDeliveryHeaders; ++i) {
    d.names.push_back("n");
    d.values.push_back("v");
  }
  EXPECT_FALSE(DeliverMsg::Decode(d.Encode()));
  // A body over the ERP request limit.
  EXPECT_FALSE(ErpCallMsg::Decode(
      ErpCallMsg{"POST", "/p", std::string(limits::kMaxErpRequestBody + 1, 'x')}.Encode()));
}

TEST(WorkerProtocolTest, FramesFedAByteAtATimeComeOutWhole) {
  FrameDecoder dec(kMaxWorkerFrame, kFromWorker);
  const std::string stream = EncodeFrame(FrameType::kLog, 7, LogMsg{1, "a"}.Encode()) +
                             EncodeFrame(FrameType::kDone, 7, DoneMsg{0}.Encode());
  std::vector<Frame> frames;
  for (char c : stream) {
    dec.Feed(std::string_view(&c, 1));
    while (auto f = dec.Next()) frames.push_back(std::move(*f));
  }
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].type, FrameType::kLog);
  EXPECT_EQ(frames[1].id, 7u);
  EXPECT_EQ(dec.buffered(), 0u);
  EXPECT_TRUE(dec.error().empty());
}

}  // namespace
}  // namespace clawguard::sandbox
