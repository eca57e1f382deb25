// SPDX-License-Identifier: Apache-2.0
// The state of a method instance's background captures
// (graph/runtime/internal/background_captures.h): one job per signature,
// queued, being recorded, ready; room for a new one; abandoning them. No GPU.
#include "encore/graph/runtime/internal/background_captures.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace encore {
namespace {

float g_buf[64];

TensorRef T(int64_t rows) { return TensorRef{g_buf, DType::kFloat32, {rows, 4}, {}}; }

using State = BackgroundCaptures::State;

class BackgroundCapturesTest : public ::testing::Test {
 protected:
  // Queues a job for a call of `rows` rows.
  void Queue(uint64_t id, int64_t rows) {
    std::vector<TensorRef> in = {T(rows)}, out = {T(rows)};
    CallPlan plan{in, out, in, out};
    auto job = std::make_unique<BackgroundCaptures::Job>();
    job->id = id;
    job->signature = CallSignature::Of(in, out);
    job->call = std::make_unique<JobCall>(plan);
    job->request.plan = &job->call->plan;
    bg_.Queue(std::move(job));
  }
  // The job of `id` recorded: ready, with a capture.
  void Ready(uint64_t id) {
    BackgroundCaptures::Job* j = bg_.Get(id);
    ASSERT_NE(j, nullptr);
    j->state = State::kReady;
    j->ready = std::make_unique<ReadyCapture>();
    j->ready->entry = std::make_unique<GraphEntry>();
    j->ready->entry->id = id;
  }
  BackgroundCaptures::Job* Find(int64_t rows) {
    std::vector<TensorRef> t = {T(rows)};
    return bg_.Find(t, t);
  }

  std::vector<uint64_t> submitted_;
  BackgroundCaptures bg_{true, ""};
  void SetUp() override {
    bg_.set_submit([this](uint64_t id) { submitted_.push_back(id); });
  }
};

TEST_F(BackgroundCapturesTest, OneJobPerSignatureHandedToTheWorker) {
  Queue(1, 2);
  Queue(2, 3);
  EXPECT_EQ(submitted_, (std::vector<uint64_t>{1, 2}));
  ASSERT_NE(Find(2), nullptr);
  EXPECT_EQ(Find(2)->id, 1u);
  EXPECT_EQ(Find(3)->id, 2u);
  EXPECT_EQ(Find(4), nullptr);
  EXPECT_EQ(Find(3)->state, State::kQueued);
  // The job's plan is its own copy of the call's tensors.
  EXPECT_EQ(Find(3)->request.plan->inputs[0].shape[0], 3);
  EXPECT_EQ(bg_.front_signature().inputs()[0].shape[0], 2);
}

// Full: the oldest ready job makes room (its capture to abandon); with
// none ready there is no room.
TEST_F(BackgroundCapturesTest, MakeRoomDropsTheOldestReadyJob) {
  Queue(1, 1);
  Queue(2, 2);
  std::unique_ptr<ReadyCapture> dropped;
  EXPECT_TRUE(bg_.MakeRoom(3, &dropped));
  EXPECT_FALSE(bg_.MakeRoom(2, &dropped));
  EXPECT_EQ(dropped, nullptr);
  Ready(2);
  Ready(1);
  EXPECT_TRUE(bg_.MakeRoom(2, &dropped));
  ASSERT_NE(dropped, nullptr);
  EXPECT_EQ(dropped->entry->id, 1u);
  EXPECT_EQ(bg_.size(), 1u);
  EXPECT_EQ(Find(1), nullptr);
}

// Abandon returns the ready captures, drops the queued jobs and moves the
// generation on; a job being recorded stays, stale, until handed back.
TEST_F(BackgroundCapturesTest, AbandonLeavesOnlyTheJobBeingRecordedStale) {
  Queue(1, 1);
  Queue(2, 2);
  Queue(3, 3);
  Ready(1);
  bg_.Get(2)->state = State::kRecording;
  bg_.set_recording(true);
  EXPECT_FALSE(bg_.stale(*bg_.Get(2)));
  std::vector<std::unique_ptr<ReadyCapture>> ready = bg_.Abandon();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0]->entry->id, 1u);
  ASSERT_EQ(bg_.size(), 1u);
  ASSERT_NE(bg_.Get(2), nullptr);
  EXPECT_TRUE(bg_.stale(*bg_.Get(2)));
  EXPECT_TRUE(bg_.recording());
  EXPECT_NE(bg_.Take(2), nullptr);
  bg_.set_recording(false);
  EXPECT_TRUE(bg_.empty());
  EXPECT_EQ(bg_.Take(2), nullptr);
  // Queued after, a job is current.
  Queue(4, 4);
  EXPECT_FALSE(bg_.stale(*bg_.Get(4)));
}

TEST(BackgroundCapturesOffTest, SaysWhyItIsOff) {
  BackgroundCaptures bg(false, "its ranks vote on captures");
  EXPECT_FALSE(bg.on());
  EXPECT_EQ(bg.off_reason(), "its ranks vote on captures");
}

}  // namespace
}  // namespace encore
