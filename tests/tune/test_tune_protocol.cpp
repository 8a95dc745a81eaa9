// The messages between rank 0 and the evaluators: each reads back as it was written, and a
// malformed one is a FormatError rather than a crash of the rank that reads it.
#include <gtest/gtest.h>

#include "protocol.hpp"
#include "r3/error.hpp"

namespace r3::tune::protocol {
namespace {

TEST(TuneProtocol, EveryMessageReadsBackAsWritten) {
  WorkItem item;
  item.id = 42;
  item.source = hash_string("__global__ void k() {}");
  item.request.kernel = 1;
  item.request.variant.flags = {"-O2"};
  item.request.variant.block = capture::Dim3{64, 2, 1};
  item.request.options.repeats = 17;
  item.request.options.return_code = true;
  Work work;
  work.sources[item.source] = "__global__ void k() {}";
  work.items = {item, item};
  work.items[1].id = 43;
  Message back = decode(encode(Message{work}));
  const Work& w = std::get<Work>(back);
  ASSERT_EQ(w.items.size(), 2u);
  EXPECT_EQ(w.items[1].id, 43u);
  EXPECT_EQ(w.items[0].source, item.source);
  EXPECT_EQ(w.items[0].request.kernel, 1u);
  EXPECT_EQ(w.items[0].request.variant.flags, std::vector<std::string>{"-O2"});
  EXPECT_EQ(w.items[0].request.variant.block->y, 2u);
  EXPECT_EQ(w.items[0].request.options.repeats, 17u);
  EXPECT_TRUE(w.items[0].request.options.return_code);
  EXPECT_FALSE(std::get<Work>(decode(encode(Message{Work{{}, {WorkItem{}}}})))
                   .items.at(0)
                   .request.options.return_code);
  EXPECT_EQ(w.sources.at(item.source), "__global__ void k() {}");

  Done done;
  done.id = 7;
  done.evaluation.outcome = replay::Outcome::timeout;
  done.evaluation.message = "ran past 30 s";
  done.evaluation.seconds = 0.1 + 0.2;  // not a short decimal: must round-trip exactly
  done.abandoned = true;
  done.restarts = 3;
  // A cubin is binary: NULs, bytes above 127, and a length that needs padding.
  done.evaluation.code = replay::Backend::LoadableCode{std::string("\x7f"
                                                                   "ELF\0\xff\x01",
                                                                   7),
                                                       "_Z1kv", "sm_90", "13.0"};
  const Done d = std::get<Done>(decode(encode(Message{done})));
  EXPECT_EQ(d.id, 7u);
  EXPECT_EQ(d.evaluation.outcome, replay::Outcome::timeout);
  EXPECT_EQ(d.evaluation.message, "ran past 30 s");
  EXPECT_EQ(d.evaluation.seconds, 0.1 + 0.2);
  EXPECT_TRUE(d.abandoned);
  EXPECT_EQ(d.restarts, 3u);
  ASSERT_TRUE(d.evaluation.code.has_value());
  EXPECT_EQ(d.evaluation.code->bytes, done.evaluation.code->bytes);
  EXPECT_EQ(d.evaluation.code->function, "_Z1kv");
  EXPECT_EQ(d.evaluation.code->architecture, "sm_90");
  EXPECT_EQ(d.evaluation.code->toolkit, "13.0");
  done.evaluation.code.reset();
  EXPECT_FALSE(std::get<Done>(decode(encode(Message{done}))).evaluation.code.has_value());

  EXPECT_EQ(std::get<Stop>(decode(encode(Message{Stop{4}}))).status, 4);
  EXPECT_TRUE(std::holds_alternative<Stopped>(decode(encode(Message{Stopped{}}))));

  EvaluatorSetup setup;
  setup.backend = "simulate";
  setup.kernels = {{2, {0, 3}}};
  setup.compile_threads = 0;
  setup.simulation = R"({"run_s":2})";
  setup.standby_sandbox = true;
  const EvaluatorSetup s = decode_setup(encode(setup));
  EXPECT_TRUE(s.standby_sandbox);
  EXPECT_EQ(s.backend, "simulate");
  EXPECT_EQ(s.kernels.at(0).launches, (std::vector<std::size_t>{0, 3}));
  ASSERT_TRUE(s.compile_threads.has_value());
  EXPECT_EQ(*s.compile_threads, 0u);
  EXPECT_EQ(s.simulation, setup.simulation);

  const Ready ready = decode_ready(encode(Ready{"no GPU", 10}));
  EXPECT_EQ(ready.error, "no GPU");
  EXPECT_EQ(ready.depth, 10u);
}

TEST(TuneProtocol, MalformedMessagesAreFormatErrors) {
  for (const char* text : {"", "{", "[]", R"({"type":"dance"})", R"({"type":"done"})",
                           R"({"type":"work","sources":{"xyz":"a"},"items":[]})",
                           R"({"type":"stop","status":"four"})"}) {
    SCOPED_TRACE(text);
    EXPECT_THROW(decode(text), FormatError);
  }
  EXPECT_THROW(decode_setup("{}"), FormatError);
  EXPECT_THROW(decode_ready(R"({"error":""})"), FormatError);
}

}  // namespace
}  // namespace r3::tune::protocol
