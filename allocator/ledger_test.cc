// SPDX-License-Identifier: Apache-2.0
#include "encore/allocator/internal/ledger.h"

#include <gtest/gtest.h>

namespace encore {
namespace {

char a, b, c, d;

TEST(LedgerTest, PendingUntilCommitThenCommitted) {
  AllocationLedger l;
  l.AddPending(1, &a, 100);
  l.AddPending(1, &b, 50);
  EXPECT_EQ(l.pending_bytes(), 150u);
  EXPECT_EQ(l.committed_bytes(), 0u);
  EXPECT_EQ(l.Commit(1), 150u);
  EXPECT_EQ(l.pending_bytes(), 0u);
  EXPECT_EQ(l.committed_bytes(), 150u);
  EXPECT_EQ(l.Commit(1), 0u);  // nothing left to move
}

TEST(LedgerTest, AbortReturnsExactlyTheCapturesOwnBlocksOnce) {
  AllocationLedger l;
  l.AddPending(1, &a, 10);
  l.Commit(1);
  l.AddPending(2, &b, 20);
  l.AddPending(3, &c, 30);
  l.AddPending(2, &d, 40);
  auto freed = l.Abort(2);
  ASSERT_EQ(freed.size(), 2u);
  EXPECT_EQ(freed[0].ptr, &b);
  EXPECT_EQ(freed[1].ptr, &d);
  EXPECT_TRUE(l.Abort(2).empty());  // never twice
  EXPECT_EQ(l.committed_bytes(), 10u);
  EXPECT_EQ(l.pending_bytes(), 30u);
  EXPECT_TRUE(l.Abort(7).empty());  // a capture that allocated nothing frees nothing
}

TEST(LedgerTest, AbortAfterCommitFreesNothing) {
  AllocationLedger l;
  l.AddPending(4, &a, 8);
  l.Commit(4);
  EXPECT_TRUE(l.Abort(4).empty());
  EXPECT_EQ(l.committed_bytes(), 8u);
}

TEST(LedgerTest, TakeCommittedLeavesPendingAlone) {
  AllocationLedger l;
  l.AddPending(1, &a, 1);
  l.Commit(1);
  l.AddPending(2, &b, 2);
  auto taken = l.TakeCommitted();
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0].ptr, &a);
  EXPECT_TRUE(l.TakeCommitted().empty());
  EXPECT_EQ(l.pending_bytes(), 2u);
}

TEST(LedgerTest, TakeCommittedFromKeepsTheBlocksBefore) {
  AllocationLedger l;
  l.AddPending(1, &a, 1);
  l.AddPending(1, &b, 2);
  l.Commit(1);
  l.AddPending(2, &c, 4);
  l.Commit(2);
  l.AddPending(3, &d, 8);  // a capture in progress keeps its block
  auto taken = l.TakeCommittedFrom(1);
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(taken[0].ptr, &b);
  EXPECT_EQ(taken[1].ptr, &c);
  ASSERT_EQ(l.blocks().size(), 2u);
  EXPECT_EQ(l.blocks()[0].ptr, &a);
  EXPECT_EQ(l.blocks()[1].ptr, &d);
  EXPECT_EQ(l.committed_bytes(), 1u);
  EXPECT_TRUE(l.TakeCommittedFrom(5).empty());
}

// A held capture abandoned: blocks another graph reaches (before `first`)
// stay, as the method's; the rest are freed, once.
TEST(LedgerTest, AbortFromCommitsWhatOthersReachAndReturnsTheRest) {
  AllocationLedger l;
  l.AddPending(1, &a, 1);
  l.Commit(1);
  l.AddPending(2, &b, 2);   // held capture 2's
  l.AddPending(3, &c, 4);   // a later capture's, which reached b
  l.Commit(3);
  l.AddPending(2, &d, 8);   // capture 2's, at index 3
  auto freed = l.AbortFrom(2, 3);
  ASSERT_EQ(freed.size(), 1u);
  EXPECT_EQ(freed[0].ptr, &d);
  EXPECT_EQ(l.committed_bytes(), 7u);
  EXPECT_EQ(l.pending_bytes(), 0u);
  EXPECT_TRUE(l.AbortFrom(2, 0).empty());  // never twice
  ASSERT_EQ(l.blocks().size(), 3u);
}

}  // namespace
}  // namespace encore
