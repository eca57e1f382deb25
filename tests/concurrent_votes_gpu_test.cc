// SPDX-License-Identifier: Apache-2.0
// Votes across GPUs, one process per rank: two methods holding
// NCCL collectives, each with a communicator of its own, vote concurrently
// from two threads of each rank; and a vote that times out is an error on
// every rank, never a hang. Needs two GPUs; skips with fewer.
//
// The ranks are processes (this binary again, through SpawnSelfTest), as
// under torchrun: a rank that aborts its communicator frees only its own
// memory, while threads of one process reach each other's NCCL buffers
// directly, so a rank voting after its peer aborted would fault on freed
// memory instead of timing out. Every rank runs under a watchdog and the
// parent kills a rank that outlives its limit: a hang fails the test.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <latch>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "encore/core/cuda_error.h"
#include "encore/graph/manager.h"
#include "encore/interop/nccl/nccl_consensus.h"
#include "encore/tests/gpu_test_util.h"
#include "encore/tests/log_capture.h"
#include "encore/tests/process_util.h"
#include "encore/tests/test_kernels.h"

namespace encore {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kRanks = 2;
constexpr int64_t kN = 256;
constexpr char kChildTest[] = "ConcurrentVotesGpuTest.DISABLED_Rank";
constexpr char kRoleVar[] = "ENCORE_VOTES_ROLE";  // concurrent | timeout
constexpr char kRankVar[] = "ENCORE_VOTES_RANK";
constexpr char kIdsVar[] = "ENCORE_VOTES_NCCL_IDS";  // hex ncclUniqueIds, comma-separated
constexpr char kDirVar[] = "ENCORE_VOTES_DIR";       // where the ranks leave each other notes

// Ends the process with a failure if it is still alive after `limit`: a rank
// that hangs must fail, not stall the suite.
class Watchdog {
 public:
  Watchdog(std::chrono::seconds limit, std::string what) : what_(std::move(what)) {
    thread_ = std::thread([this, limit] {
      std::unique_lock<std::mutex> lock(mu_);
      if (!cv_.wait_for(lock, limit, [this] { return done_; })) {
        std::fprintf(stderr, "WATCHDOG: %s did not finish in %lld s; failing\n", what_.c_str(),
                     static_cast<long long>(limit.count()));
        std::fflush(stderr);
        std::_Exit(3);
      }
    });
  }
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::string what_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

std::string Hex(const ncclUniqueId& id) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (char c : id.internal) {
    s += digits[(static_cast<unsigned char>(c) >> 4) & 15];
    s += digits[static_cast<unsigned char>(c) & 15];
  }
  return s;
}

std::vector<ncclUniqueId> ParseIds(const std::string& text) {
  std::vector<ncclUniqueId> ids;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    const std::string h = text.substr(pos, end - pos);
    ncclUniqueId id{};
    if (h.size() != 2 * sizeof(id.internal)) return {};
    for (size_t i = 0; i < sizeof(id.internal); ++i) {
      id.internal[i] = static_cast<char>(std::stoi(h.substr(2 * i, 2), nullptr, 16));
    }
    ids.push_back(id);
    pos = end + 1;
  }
  return ids;
}

bool WaitForFile(const std::string& path, std::chrono::seconds limit) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (std::ifstream(path).good()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

void Touch(const std::string& path) { std::ofstream(path) << "1\n"; }

double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Both ranks of a scenario as child processes; each must exit 0 within
// `limit`. The NCCL ids are made here, so the bootstrap root lives in this
// process while the ranks connect.
void RunRanks(const std::string& role, int communicators, std::chrono::seconds limit) {
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus < kRanks) {
    GTEST_SKIP() << "needs " << kRanks << " GPUs, " << gpus << " visible";
  }
  std::string ids;
  for (int c = 0; c < communicators; ++c) {
    ncclUniqueId id;
    ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    ids += (c ? "," : "") + Hex(id);
  }
  const std::string dir = testing::TempPath("votes_" + role);
  ASSERT_EQ(std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()), 0);
  std::vector<pid_t> pids;
  for (int r = 0; r < kRanks; ++r) {
    pid_t pid = testing::SpawnSelfTest(kChildTest, {std::string(kRoleVar) + "=" + role,
                                                    std::string(kRankVar) + "=" + std::to_string(r),
                                                    std::string(kIdsVar) + "=" + ids, std::string(kDirVar) + "=" + dir});
    ASSERT_GT(pid, 0) << "could not start rank " << r;
    pids.push_back(pid);
  }
  for (int r = 0; r < kRanks; ++r) {
    testing::ChildExit e = testing::WaitChild(pids[r], limit);
    EXPECT_TRUE(e.exited && e.exit_code == 0) << "rank " << r << ": " << e.Describe();
  }
}

// ---- Two methods voting concurrently

struct Kind {
  const char* name;
  float a, b;
  int warmup;
};
constexpr Kind kKinds[] = {{"attn", 2.0f, 1.0f, 2}, {"mlp", 3.0f, -1.0f, 3}};
constexpr int kCalls = 1000;

// y = all_reduce_sum(x * a + b) + 1 on `comm`.
Status AllReduceBody(Call& c, const Kind& k, ncclComm_t comm) {
  float* y = static_cast<float*>(c.output(0).data);
  ENCORE_RETURN_IF_ERROR(
      CudaStatus(testing::LaunchAffine(static_cast<const float*>(c.input(0).data), y, k.a, k.b, kN, c.stream()),
                 "LaunchAffine"));
  ncclResult_t r = ncclAllReduce(y, y, kN, ncclFloat, ncclSum, comm, c.stream());
  if (r != ncclSuccess) return InternalError(std::string("ncclAllReduce: ") + ncclGetErrorString(r));
  return CudaStatus(testing::LaunchAffine(y, y, 1.0f, 1.0f, kN, c.stream()), "LaunchAffine");
}

// Rank q's x[i] = call + i + q, so every rank expects
// 1 + sum over q of (a * (call + i + q) + b): integers, exact in float.
float Expected(const Kind& k, int call, int64_t i) {
  float want = 1.0f;
  for (int q = 0; q < kRanks; ++q) want += k.a * static_cast<float>(call + i + q) + k.b;
  return want;
}

struct MethodOutcome {
  MethodReport report;
  int wrong = 0;
  int errors = 0;
  std::string first_error;
  int verify_votes = 0;
  int disagreed_votes = 0;
};

// One method on its own communicator, Manager and NcclConsensus, voting on
// every replay (verify_every=1), `kCalls` calls once both threads of the
// rank are ready.
MethodOutcome RunMethod(int rank, const Kind& k, ncclComm_t comm, std::latch* start) {
  MethodOutcome out;
  auto fail = [&](const std::string& e) {
    if (out.errors++ == 0) out.first_error = e;
  };
  if (cudaSetDevice(rank) != cudaSuccess) {
    fail("cudaSetDevice");
    start->count_down();
    return out;
  }
  LogCapture logs(std::make_shared<spdlog::logger>(std::string("votes_") + k.name));
  logs.logger()->set_level(spdlog::level::info);
  auto consensus = NcclConsensus::Create(comm, std::chrono::seconds(30));
  ManagerOptions o;
  if (consensus.ok()) o.consensus = *consensus;
  o.logger = logs.logger();
  auto mgr = Manager::Create(o);
  MethodSpec spec;
  spec.name = k.name;
  spec.constants = std::vector<Constant>{};
  MethodFlags f;
  f.warmup_calls = k.warmup;
  f.verify_every = 1;
  spec.flags = f;
  spec.fn = [k, comm](Call& c) { return AllReduceBody(c, k, comm); };
  StatusOr<Method*> m = mgr.ok() ? (*mgr)->Register(spec) : StatusOr<Method*>(mgr.status());
  if (!consensus.ok() || !m.ok()) {
    fail(consensus.ok() ? m.status().ToString() : consensus.status().ToString());
    start->count_down();
    return out;
  }
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  float *in[2], *res[2];
  for (int b = 0; b < 2; ++b) {
    cudaMalloc(&in[b], kN * 4);
    cudaMalloc(&res[b], kN * 4);
  }
  std::vector<float> h(kN);
  start->arrive_and_wait();
  for (int call = 0; call < kCalls; ++call) {
    const int b = call % 2;  // addresses move
    for (int64_t i = 0; i < kN; ++i) h[i] = static_cast<float>(call + i + rank);
    cudaMemcpyAsync(in[b], h.data(), kN * 4, cudaMemcpyHostToDevice, s);
    TensorRef ti{in[b], DType::kFloat32, {kN}, {}}, to{res[b], DType::kFloat32, {kN}, {}};
    if (Status st = (*m)->Run({&ti, 1}, {&to, 1}, s); !st.ok()) fail("call " + std::to_string(call) + ": " + st.ToString());
    cudaMemcpyAsync(h.data(), res[b], kN * 4, cudaMemcpyDeviceToHost, s);
    if (cudaError_t e = cudaStreamSynchronize(s); e != cudaSuccess) fail(cudaGetErrorName(e));
    for (int64_t i = 0; i < kN; ++i) {
      if (h[i] != Expected(k, call, i)) {
        ++out.wrong;
        break;
      }
    }
  }
  out.report = (*m)->Report();
  for (const CapturedEvent& e : logs.Named("vote")) {
    if (e.field("what") != "verify") continue;
    ++out.verify_votes;
    if (e.field("agreed") != "true") ++out.disagreed_votes;
  }
  for (int b = 0; b < 2; ++b) {
    cudaFree(in[b]);
    cudaFree(res[b]);
  }
  cudaStreamDestroy(s);
  return out;
}

void ConcurrentRank(int rank, const std::vector<ncclUniqueId>& ids) {
  ASSERT_EQ(ids.size(), 2u);
  ASSERT_EQ(cudaSetDevice(rank), cudaSuccess);
  ncclComm_t comms[2];
  for (int c = 0; c < 2; ++c) ASSERT_EQ(ncclCommInitRank(&comms[c], kRanks, ids[c], rank), ncclSuccess) << c;
  const auto t0 = Clock::now();
  std::latch start(2);
  MethodOutcome outcomes[2];
  {
    std::vector<std::thread> threads;
    for (int k = 0; k < 2; ++k) {
      threads.emplace_back([&, k] { outcomes[k] = RunMethod(rank, kKinds[k], comms[k], &start); });
    }
    for (auto& t : threads) t.join();
  }
  const double seconds = SecondsSince(t0);
  for (ncclComm_t c : comms) ncclCommDestroy(c);
  for (int k = 0; k < 2; ++k) {
    const MethodOutcome& o = outcomes[k];
    const MethodReport& r = o.report;
    std::printf("rank %d method %s: %d/%d calls right, %d errors, captures %lld, replays %lld, verified %lld, "
                "verify votes %d (%d disagreed), phase %s%s%s; %.2f s for both methods\n",
                rank, kKinds[k].name, kCalls - o.wrong, kCalls, o.errors, static_cast<long long>(r.captures),
                static_cast<long long>(r.replays), static_cast<long long>(r.verified_launches), o.verify_votes,
                o.disagreed_votes, std::string(MethodPhaseName(r.phase)).c_str(),
                r.graphs_off_reason.empty() ? "" : "; graphs off: ", r.graphs_off_reason.c_str(), seconds);
    const std::string where = "rank " + std::to_string(rank) + " method " + kKinds[k].name;
    EXPECT_EQ(o.errors, 0) << where << ": " << o.first_error;
    EXPECT_EQ(o.wrong, 0) << where;
    EXPECT_EQ(r.graphs_off_reason, "") << where;
    EXPECT_EQ(r.captures, 1) << where;
    EXPECT_EQ(r.warmup_calls, kKinds[k].warmup) << where;
    const int64_t replays = kCalls - kKinds[k].warmup - 1;
    EXPECT_EQ(r.replays, replays) << where;
    // Every replay checked against an eager run, and each check a vote of
    // this method's own that every rank agreed on.
    EXPECT_EQ(r.verified_launches, replays) << where;
    EXPECT_EQ(r.verify_failures, 0) << where;
    EXPECT_EQ(o.verify_votes, replays) << where;
    EXPECT_EQ(o.disagreed_votes, 0) << where;
  }
}

// ---- A vote that times out

constexpr auto kVoteTimeout = std::chrono::milliseconds(3000);

// Rank 0 reaches its capture vote while rank 1 has stopped calling; its vote
// times out. Rank 1 then resumes and votes alone; its vote fails too. On
// both, that call and the next return the error without running the body
// (whose all-reduce could never pair), the method is eager with the reason,
// a vote_failed error is logged, and the communicator is aborted.
void TimeoutRank(int rank, const std::vector<ncclUniqueId>& ids, const std::string& dir) {
  ASSERT_EQ(ids.size(), 1u);
  ASSERT_EQ(cudaSetDevice(rank), cudaSuccess);
  ncclComm_t comm;
  ASSERT_EQ(ncclCommInitRank(&comm, kRanks, ids[0], rank), ncclSuccess);
  LogCapture logs(std::make_shared<spdlog::logger>("votes_timeout"));
  auto consensus = NcclConsensus::Create(comm, kVoteTimeout);
  ASSERT_TRUE(consensus.ok()) << consensus.status();
  ManagerOptions o;
  o.consensus = *consensus;
  o.logger = logs.logger();
  auto mgr = Manager::Create(o);
  ASSERT_TRUE(mgr.ok()) << mgr.status();
  MethodSpec spec;
  spec.name = "stall";
  spec.constants = std::vector<Constant>{};
  MethodFlags f;
  f.warmup_calls = 2;
  spec.flags = f;
  const Kind k = kKinds[0];
  std::atomic<int> bodies{0};
  spec.fn = [&bodies, k, comm](Call& c) {
    ++bodies;
    return AllReduceBody(c, k, comm);
  };
  auto m = (*mgr)->Register(spec);
  ASSERT_TRUE(m.ok()) << m.status();
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  float *in, *res;
  ASSERT_EQ(cudaMalloc(&in, kN * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&res, kN * 4), cudaSuccess);
  std::vector<float> h(kN);
  auto call = [&](int index) {
    for (int64_t i = 0; i < kN; ++i) h[i] = static_cast<float>(index + i + rank);
    EXPECT_EQ(cudaMemcpyAsync(in, h.data(), kN * 4, cudaMemcpyHostToDevice, s), cudaSuccess);
    EXPECT_EQ(cudaMemsetAsync(res, 0xff, kN * 4, s), cudaSuccess);  // NaN: untouched unless the body runs
    TensorRef ti{in, DType::kFloat32, {kN}, {}}, to{res, DType::kFloat32, {kN}, {}};
    Status st = (*m)->Run({&ti, 1}, {&to, 1}, s);
    EXPECT_EQ(cudaMemcpyAsync(h.data(), res, kN * 4, cudaMemcpyDeviceToHost, s), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    return st;
  };
  for (int i = 0; i < 2; ++i) {
    Status st = call(i);
    ASSERT_TRUE(st.ok()) << "rank " << rank << " warmup " << i << ": " << st;
    EXPECT_EQ(h[7], Expected(k, i, 7)) << "rank " << rank << " warmup " << i;
  }
  ASSERT_EQ(bodies.load(), 2);
  // Rank 1 stops calling until rank 0 has given up on its vote.
  if (rank == 1) {
    ASSERT_TRUE(WaitForFile(dir + "/rank0_done", std::chrono::seconds(60))) << "rank 0 never finished";
  }
  auto t0 = Clock::now();
  Status timed_out = call(2);
  const double vote_s = SecondsSince(t0);
  const bool body_left_output = h[7] == h[7];  // NaN unless written
  t0 = Clock::now();
  Status next = call(3);
  const double next_s = SecondsSince(t0);
  if (rank == 0) Touch(dir + "/rank0_done");
  const MethodReport r = (*m)->Report();
  auto failed = logs.Find("vote_failed");
  std::printf("rank %d: the vote's call returned after %.2f s: %s\n  the next call after %.3f s: %s\n"
              "  bodies run %d, phase %s, graphs off: %s\n  vote_failed logged: %s\n  communicator aborted: %s\n",
              rank, vote_s, timed_out.ToString().c_str(), next_s, next.ToString().c_str(), bodies.load(),
              std::string(MethodPhaseName(r.phase)).c_str(), r.graphs_off_reason.c_str(),
              failed ? failed->line.c_str() : "no", (*consensus)->aborted() ? "yes" : "no");
  EXPECT_FALSE(timed_out.ok()) << "rank " << rank;
  EXPECT_NE(timed_out.message().find("vote"), std::string_view::npos) << timed_out;
  EXPECT_NE(timed_out.message().find("'stall'"), std::string_view::npos) << timed_out;
  if (rank == 0) {
    // Waited for its peer for the whole timeout, and not much longer.
    EXPECT_EQ(timed_out.code(), StatusCode::kDeadlineExceeded) << timed_out;
    EXPECT_GE(vote_s, 0.9 * std::chrono::duration<double>(kVoteTimeout).count());
  }
  EXPECT_LT(vote_s, 3 * std::chrono::duration<double>(kVoteTimeout).count());
  EXPECT_FALSE(next.ok());
  EXPECT_EQ(next.code(), timed_out.code()) << next;
  EXPECT_LT(next_s, 0.5) << "the next call voted or ran again";
  EXPECT_EQ(bodies.load(), 2) << "the body ran after the vote failed";
  EXPECT_FALSE(body_left_output) << "the output was written after the vote failed";
  EXPECT_EQ(r.captures, 0);
  EXPECT_EQ(r.phase, MethodPhase::kEager);
  EXPECT_NE(r.graphs_off_reason.find("could not vote on the capture of 'stall'"), std::string::npos)
      << r.graphs_off_reason;
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(failed->level, spdlog::level::err);
  EXPECT_TRUE((*consensus)->aborted());
  // Rank 0 keeps its process (and the memory rank 1's vote writes to)
  // until rank 1 has voted.
  if (rank == 0) {
    EXPECT_TRUE(WaitForFile(dir + "/rank1_done", std::chrono::seconds(60)));
  }
  if (rank == 1) Touch(dir + "/rank1_done");
  cudaFree(in);
  cudaFree(res);
  cudaStreamDestroy(s);
  // An aborted communicator is freed: destroying it again would be a
  // double free.
  if (!(*consensus)->aborted()) ncclCommDestroy(comm);
}

// Run only as a rank of the tests below.
TEST(ConcurrentVotesGpuTest, DISABLED_Rank) {
  const std::string role = testing::GetEnv(kRoleVar);
  if (role.empty()) GTEST_SKIP() << "a rank of ConcurrentVotesGpuTest's tests, started by them";
  const int rank = std::atoi(testing::GetEnv(kRankVar).c_str());
  const std::vector<ncclUniqueId> ids = ParseIds(testing::GetEnv(kIdsVar));
  Watchdog watchdog(std::chrono::seconds(120), "rank " + std::to_string(rank) + " (" + role + ")");
  if (role == "concurrent") {
    ConcurrentRank(rank, ids);
  } else if (role == "timeout") {
    TimeoutRank(rank, ids, testing::GetEnv(kDirVar));
  } else {
    FAIL() << "unknown role " << role;
  }
}

TEST(ConcurrentVotesGpuTest, TwoMethodsWithCollectivesVoteConcurrentlyOnTheirOwnCommunicators) {
  RunRanks("concurrent", 2, std::chrono::seconds(150));
}

TEST(ConcurrentVotesGpuTest, AVoteThatTimesOutIsAnErrorOnEveryRank) {
  RunRanks("timeout", 1, std::chrono::seconds(150));
}

}  // namespace
}  // namespace encore
