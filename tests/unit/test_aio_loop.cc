// The aio transfer loop against a fake engine (short transfers, EAGAIN, EINTR,
// failures, depth), and the engine contract of the real libaio and io_uring
// engines on a small file.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "aio/io_engine.h"
#include "aio/io_loop.h"
#include "aio/shard_files.h"
#include "core/error.h"

namespace {

using ds::IoCompletion;
using ds::IoEngine;
using ds::IoFailure;
using ds::IoOp;
using ds::IoRequest;
using ds::Extent;

// Files are byte vectors keyed by fd. A committed request is carried out at
// once but only reported by a later reap, newest first, so completions arrive
// out of order.
class FakeEngine : public IoEngine {
 public:
  explicit FakeEngine(unsigned depth) : depth_(depth) {}
  ~FakeEngine() override { drain(); }

  std::map<int, std::vector<char>> files;
  std::set<uint64_t> short_once;       // tags whose first transfer moves half
  std::map<uint64_t, int> fail;        // tag -> errno
  std::map<uint64_t, int> fail_resumed;  // tag -> errno, once a short transfer is resumed
  std::set<uint64_t> eof;              // tags whose read returns 0
  int eagain_every = 0;                // every Nth commit takes nothing
  int eintr_every = 0;                 // every Nth reap is interrupted
  unsigned max_outstanding = 0;
  unsigned commits = 0, reaps = 0;
  std::map<uint64_t, int> transfers;   // requests carried out per tag
  std::map<uint64_t, std::vector<std::pair<uint64_t, size_t>>> requests;  // tag -> (offset, bytes) each

  const char* method() const override { return "FAKE"; }
  unsigned depth() const override { return depth_; }
  unsigned queued() const override { return static_cast<unsigned>(queue_.size()); }
  unsigned in_flight() const override { return static_cast<unsigned>(done_.size()); }

  bool queue(const IoRequest& r) override {
    if (queue_.size() + done_.size() >= depth_) return false;
    queue_.push_back(r);
    max_outstanding = std::max(max_outstanding, queued() + in_flight());
    return true;
  }

  unsigned commit() override {
    ++commits;
    if (eagain_every > 0 && commits % static_cast<unsigned>(eagain_every) == 0) return 0;
    const unsigned n = queued();
    for (const IoRequest& r : queue_) done_.push_back(carry_out(r));
    queue_.clear();
    return n;
  }

  unsigned reap(unsigned min_nr, IoCompletion* out, unsigned max) override {
    ++reaps;
    if (eintr_every > 0 && reaps % static_cast<unsigned>(eintr_every) == 0) return 0;
    EXPECT_LE(std::min<size_t>(min_nr, done_.size()), max);
    unsigned n = 0;
    while (!done_.empty() && n < max) {
      out[n++] = done_.back();
      done_.pop_back();
    }
    return n;
  }

  void drain() noexcept override {
    queue_.clear();
    done_.clear();
  }

 private:
  IoCompletion carry_out(const IoRequest& r) {
    requests[r.tag].emplace_back(r.offset, r.bytes);
    const bool resumed = transfers[r.tag]++ > 0;
    int err = 0;
    if (fail.count(r.tag))
      err = fail[r.tag];
    else if (resumed && fail_resumed.count(r.tag))
      err = fail_resumed[r.tag];
    if (err != 0) return {r.tag, -static_cast<int64_t>(err)};
    if (r.op == IoOp::kRead && eof.count(r.tag)) return {r.tag, 0};
    size_t n = r.bytes;
    if (short_once.erase(r.tag)) n = r.bytes / 2;
    std::vector<char>& file = files[r.fd];
    if (file.size() < r.offset + n) file.resize(r.offset + n);
    if (r.op == IoOp::kWrite)
      std::memcpy(file.data() + r.offset, r.buf, n);
    else
      std::memcpy(r.buf, file.data() + r.offset, n);
    return {r.tag, static_cast<int64_t>(n)};
  }

  unsigned depth_;
  std::vector<IoRequest> queue_;
  std::vector<IoCompletion> done_;
};

// Shard i's bytes: a function of (i, offset), so a shard in the wrong file or
// at the wrong offset shows.
char byte_of(size_t shard, size_t b) { return static_cast<char>(shard * 31 + b * 7 + 1); }

struct Shards {
  size_t bytes;
  std::vector<Extent> io;
  std::vector<std::vector<char>> ring_storage;
  ds::BufferRing ring;
  ds::PassHooks fill_and_check;  // what --validate does
  std::vector<int> completed;    // complete() calls per shard
  Shards(size_t n, size_t bytes_, size_t buffers) : bytes(bytes_), completed(n, 0) {
    for (size_t i = 0; i < n; ++i) io.push_back(Extent{static_cast<int>(100 + i), 0, bytes});
    ring_storage.assign(buffers, std::vector<char>(bytes));
    for (auto& b : ring_storage) ring.buffers.push_back(b.data());
    fill_and_check.prepare = [this](size_t shard, void* buf) {
      for (size_t b = 0; b < bytes; ++b) static_cast<char*>(buf)[b] = byte_of(shard, b);
    };
    fill_and_check.complete = [this](size_t shard, void*) { ++completed[shard]; };
  }
  ds::PassHooks poison_and_check() {
    ds::PassHooks h;
    h.prepare = [this](size_t, void* buf) { std::memset(buf, 0, bytes); };
    h.complete = [this](size_t shard, void* buf) {
      ++completed[shard];
      for (size_t b = 0; b < bytes; ++b)
        if (static_cast<char*>(buf)[b] != byte_of(shard, b))
          throw ds::RunError("shard " + std::to_string(shard) + " differs at " + std::to_string(b));
    };
    return h;
  }
  bool file_ok(FakeEngine& e, size_t shard) const {
    const std::vector<char>& f = e.files[io[shard].fd];
    if (f.size() != bytes) return false;
    for (size_t b = 0; b < bytes; ++b)
      if (f[b] != byte_of(shard, b)) return false;
    return true;
  }
};

// The IoFailure a write pass ends with (a failed expectation when it ends well).
IoFailure write_failure(FakeEngine& e, const Shards& s) {
  try {
    ds::run_pass(e, IoOp::kWrite, s.io, s.ring);
  } catch (const IoFailure& f) {
    return f;
  }
  ADD_FAILURE() << "the write pass did not fail";
  return IoFailure("no failure", SIZE_MAX, UINT64_MAX, -1, 0);
}

TEST(AioLoop, WritesEveryShardOnceAndRespectsDepth) {
  Shards s(10, 4096, 3);
  FakeEngine e(3);
  const ds::PassResult r = ds::run_pass(e, IoOp::kWrite, s.io, s.ring, s.fill_and_check);
  EXPECT_EQ(e.max_outstanding, 3u);
  EXPECT_EQ(r.short_transfers, 0u);
  EXPECT_GE(r.wall_ns, r.submit_ns);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_TRUE(s.file_ok(e, i)) << "shard " << i;
    EXPECT_EQ(e.transfers[i], 1) << "shard " << i;
    EXPECT_EQ(s.completed[i], 1) << "shard " << i;
  }
  EXPECT_EQ(e.queued() + e.in_flight(), 0u);
}

TEST(AioLoop, FewerBuffersThanDepthBoundWhatIsInFlight) {
  Shards s(9, 4096, 2);
  FakeEngine e(8);
  ds::run_pass(e, IoOp::kWrite, s.io, s.ring, s.fill_and_check);
  EXPECT_EQ(e.max_outstanding, 2u);
  for (size_t i = 0; i < 9; ++i) EXPECT_TRUE(s.file_ok(e, i)) << "shard " << i;
}

TEST(AioLoop, ReadsBackWhatWasWritten) {
  Shards s(7, 8192, 4);
  FakeEngine e(4);
  ds::run_pass(e, IoOp::kWrite, s.io, s.ring, s.fill_and_check);
  std::fill(s.completed.begin(), s.completed.end(), 0);
  ds::run_pass(e, IoOp::kRead, s.io, s.ring, s.poison_and_check());
  for (size_t i = 0; i < 7; ++i) EXPECT_EQ(s.completed[i], 1) << "shard " << i;
}

TEST(AioLoop, AReadThatMovedNothingIsCaughtByTheCheck) {
  Shards s(6, 4096, 3);
  FakeEngine e(3);
  ds::run_pass(e, IoOp::kWrite, s.io, s.ring, s.fill_and_check);
  e.files[s.io[4].fd][100] ^= 1;  // one flipped byte in shard 4's file
  try {
    ds::run_pass(e, IoOp::kRead, s.io, s.ring, s.poison_and_check());
    FAIL() << "a corrupted shard passed";
  } catch (const ds::RunError& err) {
    EXPECT_NE(std::string(err.what()).find("shard 4 differs at 100"), std::string::npos) << err.what();
  }
  EXPECT_EQ(e.queued() + e.in_flight(), 0u);
}

TEST(AioLoop, ShortTransfersAreResubmittedNeverCountedAsDone) {
  Shards s(6, 8192, 2);
  FakeEngine e(2);
  e.short_once = {1, 4};
  const ds::PassResult r = ds::run_pass(e, IoOp::kWrite, s.io, s.ring, s.fill_and_check);
  EXPECT_EQ(r.short_transfers, 2u);
  EXPECT_EQ(e.transfers[1], 2);
  EXPECT_EQ(e.transfers[4], 2);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_TRUE(s.file_ok(e, i)) << "shard " << i;
    EXPECT_EQ(s.completed[i], 1) << "shard " << i;
  }
  e.short_once = {0, 5};
  const ds::PassResult rr = ds::run_pass(e, IoOp::kRead, s.io, s.ring, s.poison_and_check());
  EXPECT_EQ(rr.short_transfers, 2u);
}

TEST(AioLoop, ReadEndingEarlyFailsNamingTheShard) {
  Shards s(5, 4096, 8);
  FakeEngine e(8);
  ds::run_pass(e, IoOp::kWrite, s.io, s.ring, s.fill_and_check);
  e.eof = {3};
  try {
    ds::run_pass(e, IoOp::kRead, s.io, s.ring);
    FAIL() << "a read that returned 0 bytes was counted as done";
  } catch (const IoFailure& f) {
    EXPECT_EQ(f.shard, 3u);
    EXPECT_EQ(f.err, 0);
    EXPECT_NE(std::string(f.what()).find("file ends"), std::string::npos) << f.what();
  }
  EXPECT_EQ(e.queued() + e.in_flight(), 0u) << "the engine is drained before the error leaves";
}

TEST(AioLoop, NoSpaceFailsWithShardAndProgress) {
  Shards s(8, 4096, 2);
  FakeEngine e(2);
  e.fail[5] = ENOSPC;
  const IoFailure f = write_failure(e, s);
  EXPECT_EQ(f.shard, 5u);
  EXPECT_EQ(f.err, ENOSPC);
  EXPECT_EQ(f.offset, 0u);
  EXPECT_LE(f.shards_done, 5u);
  EXPECT_GE(f.shards_done, 3u);
  EXPECT_NE(std::string(f.what()).find("No space left"), std::string::npos) << f.what();
  EXPECT_EQ(e.queued() + e.in_flight(), 0u);
}

TEST(AioLoop, EagainAndEintrAreRetried) {
  Shards s(20, 4096, 4);
  FakeEngine e(4);
  e.eagain_every = 2;
  e.eintr_every = 3;
  const ds::PassResult r = ds::run_pass(e, IoOp::kWrite, s.io, s.ring, s.fill_and_check);
  EXPECT_EQ(r.short_transfers, 0u);
  for (size_t i = 0; i < 20; ++i) {
    EXPECT_TRUE(s.file_ok(e, i)) << "shard " << i;
    EXPECT_EQ(e.transfers[i], 1) << "shard " << i;
  }
}

// Several shards in one file, at offsets out of order and with gaps between them.
struct OneFile : Shards {
  static constexpr int kFd = 42;
  explicit OneFile(const std::vector<uint64_t>& offsets) : Shards(offsets.size(), 4096, 2) {
    for (size_t i = 0; i < offsets.size(); ++i) io[i] = Extent{kFd, offsets[i], bytes};
  }
  // Shard i's bytes are where its extent says, in the one file.
  bool extent_ok(FakeEngine& e, size_t shard) const {
    const std::vector<char>& f = e.files[kFd];
    if (f.size() < io[shard].offset + bytes) return false;
    for (size_t b = 0; b < bytes; ++b)
      if (f[io[shard].offset + b] != byte_of(shard, b)) return false;
    return true;
  }
};

const std::vector<uint64_t> kOffsets = {3 * 4096, 0, 10 * 4096, 5 * 4096 + 512};

TEST(AioExtents, ShardsOfOneFileGoToTheirOffsets) {
  OneFile s(kOffsets);
  FakeEngine e(2);
  ds::run_pass(e, IoOp::kWrite, s.io, s.ring, s.fill_and_check);
  EXPECT_EQ(e.files.size(), 1u) << "one file";
  for (size_t i = 0; i < kOffsets.size(); ++i) {
    ASSERT_EQ(e.requests[i].size(), 1u) << "shard " << i;
    EXPECT_EQ(e.requests[i][0], std::make_pair(kOffsets[i], s.bytes)) << "shard " << i;
    EXPECT_TRUE(s.extent_ok(e, i)) << "shard " << i;
  }
  EXPECT_EQ(e.files[OneFile::kFd].size(), 10 * 4096 + s.bytes) << "the file ends with the last extent";
  // And back: every shard read from its own offset.
  std::fill(s.completed.begin(), s.completed.end(), 0);
  ds::run_pass(e, IoOp::kRead, s.io, s.ring, s.poison_and_check());
  for (size_t i = 0; i < kOffsets.size(); ++i) EXPECT_EQ(s.completed[i], 1) << "shard " << i;
}

TEST(AioExtents, AShortTransferResumesAtTheExtentOffsetPlusWhatMoved) {
  OneFile s(kOffsets);
  FakeEngine e(2);
  e.short_once = {0, 3};
  const ds::PassResult r = ds::run_pass(e, IoOp::kWrite, s.io, s.ring, s.fill_and_check);
  EXPECT_EQ(r.short_transfers, 2u);
  const size_t half = s.bytes / 2;
  for (size_t i : {size_t{0}, size_t{3}}) {
    ASSERT_EQ(e.requests[i].size(), 2u) << "shard " << i;
    EXPECT_EQ(e.requests[i][1], std::make_pair(kOffsets[i] + half, s.bytes - half)) << "shard " << i;
  }
  for (size_t i = 0; i < kOffsets.size(); ++i) EXPECT_TRUE(s.extent_ok(e, i)) << "shard " << i;
  e.short_once = {2};
  std::fill(s.completed.begin(), s.completed.end(), 0);
  EXPECT_EQ(ds::run_pass(e, IoOp::kRead, s.io, s.ring, s.poison_and_check()).short_transfers, 1u);
  EXPECT_EQ(e.requests[2].back(), std::make_pair(kOffsets[2] + half, s.bytes - half));
}

TEST(AioExtents, AFailureReportsTheFileOffset) {
  OneFile s(kOffsets);
  FakeEngine e(2);
  e.fail[2] = EIO;
  const IoFailure f = write_failure(e, s);
  EXPECT_EQ(f.shard, 2u);
  EXPECT_EQ(f.offset, kOffsets[2]);
  EXPECT_NE(std::string(f.what()).find("at offset " + std::to_string(kOffsets[2]) + " "), std::string::npos)
      << f.what();
  // A resumed transfer that fails: where the remainder starts in the file.
  FakeEngine resumed(2);
  resumed.short_once = {3};
  resumed.fail_resumed[3] = EIO;
  const IoFailure g = write_failure(resumed, s);
  const uint64_t at = kOffsets[3] + s.bytes / 2;
  EXPECT_EQ(g.shard, 3u);
  EXPECT_EQ(g.offset, at);
  EXPECT_NE(std::string(g.what()).find("at offset " + std::to_string(at) + " "), std::string::npos) << g.what();
}

}  // namespace ds

namespace {

// The real engines keep the contract: depth bounds queue(), commit() hands
// over what was queued, reap() returns each tag once with the bytes moved.
class EngineContract : public ::testing::TestWithParam<ds::AioEngineKind> {};

TEST_P(EngineContract, QueueCommitReap) {
  char tmpl[] = "/tmp/ds-aio-engine-XXXXXX";
  const int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  unlink(tmpl);
  std::unique_ptr<IoEngine> e;
  try {
    e = ds::make_io_engine(GetParam(), 4);
  } catch (const ds::RunError& err) {
    close(fd);
    GTEST_SKIP() << err.what();
  }
  EXPECT_EQ(e->depth(), 4u);
  std::vector<std::vector<char>> bufs(5, std::vector<char>(4096));
  for (size_t i = 0; i < 5; ++i) std::fill(bufs[i].begin(), bufs[i].end(), static_cast<char>('a' + i));
  for (uint64_t i = 0; i < 4; ++i)
    EXPECT_TRUE(e->queue(IoRequest{IoOp::kWrite, fd, bufs[i].data(), 4096, i * 4096, 10 + i}));
  EXPECT_FALSE(e->queue(IoRequest{IoOp::kWrite, fd, bufs[4].data(), 4096, 4 * 4096, 14}));
  EXPECT_EQ(e->queued(), 4u);
  unsigned taken = 0;
  for (int tries = 0; taken < 4 && tries < 1000; ++tries) taken += e->commit();
  EXPECT_EQ(taken, 4u);
  EXPECT_EQ(e->in_flight(), 4u);
  std::vector<IoCompletion> ev(4);
  std::set<uint64_t> tags;
  while (tags.size() < 4) {
    const unsigned n = e->reap(1, ev.data(), 4);
    for (unsigned i = 0; i < n; ++i) {
      EXPECT_EQ(ev[i].result, 4096);
      EXPECT_TRUE(tags.insert(ev[i].tag).second) << "tag " << ev[i].tag << " twice";
    }
  }
  EXPECT_EQ(tags, (std::set<uint64_t>{10, 11, 12, 13}));
  EXPECT_EQ(e->in_flight(), 0u);
  // Read one back; then leave requests queued and in flight for the destructor.
  std::vector<char> back(4096);
  EXPECT_TRUE(e->queue(IoRequest{IoOp::kRead, fd, back.data(), 4096, 2 * 4096, 7}));
  EXPECT_EQ(e->commit(), 1u);
  ASSERT_EQ(e->reap(1, ev.data(), 4), 1u);
  EXPECT_EQ(ev[0].tag, 7u);
  EXPECT_EQ(back, bufs[2]);
  // Past the end of the file: a read that moves 0 bytes.
  EXPECT_TRUE(e->queue(IoRequest{IoOp::kRead, fd, back.data(), 4096, 100 * 4096, 8}));
  EXPECT_EQ(e->commit(), 1u);
  ASSERT_EQ(e->reap(1, ev.data(), 4), 1u);
  EXPECT_EQ(ev[0].result, 0);
  // A bad descriptor comes back as -EBADF (in the completion or from commit).
  EXPECT_TRUE(e->queue(IoRequest{IoOp::kRead, 9999, back.data(), 4096, 0, 9}));
  try {
    if (e->commit() == 1) {
      ASSERT_EQ(e->reap(1, ev.data(), 4), 1u);
      EXPECT_EQ(ev[0].result, -EBADF);
    }
  } catch (const ds::RunError& err) {
    EXPECT_NE(std::string(err.what()).find("Bad file descriptor"), std::string::npos) << err.what();
  }
  e->drain();
  EXPECT_EQ(e->queued() + e->in_flight(), 0u);
  EXPECT_TRUE(e->queue(IoRequest{IoOp::kWrite, fd, bufs[0].data(), 4096, 0, 1}));
  EXPECT_EQ(e->commit(), 1u);
  e.reset();  // drains what is in flight before the buffers go
  close(fd);
}

INSTANTIATE_TEST_SUITE_P(Engines, EngineContract,
                         ::testing::Values(ds::AioEngineKind::kLibaio, ds::AioEngineKind::kUring,
                                           ds::AioEngineKind::kPsync),
                         [](const ::testing::TestParamInfo<ds::AioEngineKind>& i) {
                           return std::string(ds::engine_option_name(i.param));
                         });

bool is_dir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

TEST(AioWorkspace, CreatesMissingParentsAndRemovesOnlyWhatItCreated) {
  char tmpl[] = "/tmp/ds-aio-ws-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string base = tmpl;
  {
    ds::Workspace ws(base + "/a/b/");
    EXPECT_EQ(ws.path(), base + "/a/b");
    EXPECT_TRUE(is_dir(base + "/a/b"));
    ds::ShardFiles files(ws.path());
    EXPECT_EQ(files.add(8192, false), 0);
    EXPECT_EQ(files.add(8192, false), 0);
    struct stat st;
    ASSERT_EQ(fstat(files.fd(1), &st), 0);
    EXPECT_EQ(st.st_size, 8192) << "reserved to the shard size";
    EXPECT_EQ(stat(files.path(1).c_str(), &st), 0);
  }
  EXPECT_FALSE(is_dir(base + "/a")) << "the directories it created are gone";
  EXPECT_TRUE(is_dir(base)) << "the one that existed stays";
  {
    ds::Workspace ws(base + "/kept");
    ds::ShardFiles files(ws.path());
    EXPECT_EQ(files.add(4096, false), 0);
    files.keep();
    ws.keep();
  }
  EXPECT_TRUE(is_dir(base + "/kept"));
  struct stat st;
  EXPECT_EQ(stat((base + "/kept").c_str(), &st), 0);
  // Clean up what keep() left.
  const std::string kept_file = base + "/kept/dev-sandbox-aio." + std::to_string(getpid()) + ".0";
  EXPECT_EQ(unlink(kept_file.c_str()), 0);
  rmdir((base + "/kept").c_str());
  EXPECT_EQ(rmdir(base.c_str()), 0) << "nothing else was left in " << base;
}

TEST(AioWorkspace, AFileInThePathIsARunError) {
  char tmpl[] = "/tmp/ds-aio-file-XXXXXX";
  const int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  close(fd);
  EXPECT_THROW(ds::Workspace(std::string(tmpl) + "/ws"), ds::RunError);
  unlink(tmpl);
}

TEST(AioWorkspace, FilesystemTypeAndMemoryBacking) {
  struct statfs st;
  if (statfs("/dev/shm", &st) == 0 && static_cast<long>(st.f_type) == 0x01021994) {
    const ds::FilesystemInfo shm = ds::filesystem_of("/dev/shm");
    EXPECT_EQ(shm.type, "tmpfs");
    EXPECT_TRUE(shm.memory_backed);
  }
  const ds::FilesystemInfo proc = ds::filesystem_of("/proc");
  EXPECT_EQ(proc.type, "proc");
  EXPECT_FALSE(proc.memory_backed);
  EXPECT_THROW(ds::filesystem_of("/no/such/dir/for/ds-aio"), ds::RunError);
}

}  // namespace

// The transfer loop's nap (look_nap_rule): it naps where the copies are host CPU work,
// where the CPUs are not known, and where the threads that must run outnumber the
// CPUs; with a CPU for each it spins. The decision, not a timing.
TEST(LookNapRule, NapsOnlyWhereSpinningWouldTakeACpuThatIsNeeded) {
  const ds::LookNapRule scarce = ds::look_nap_rule(2, 3, false);
  EXPECT_TRUE(scarce.nap);
  EXPECT_EQ(scarce.line, "transfer loop: napping 20 us after 100 us idle (2 CPUs for 3 busy threads)");
  const ds::LookNapRule spare = ds::look_nap_rule(16, 3, false);
  EXPECT_FALSE(spare.nap);
  EXPECT_EQ(spare.line, "transfer loop: spinning while copies are in flight (16 CPUs for 3 busy threads)");
  EXPECT_FALSE(ds::look_nap_rule(2, 2, false).nap) << "a CPU for each thread: spin";
  EXPECT_TRUE(ds::look_nap_rule(2, 3, false).nap);
  const ds::LookNapRule host = ds::look_nap_rule(192, 2, true);
  EXPECT_TRUE(host.nap) << "sim, the doubles: the copies need the CPUs the loop would spin on";
  EXPECT_EQ(host.line, "transfer loop: napping 20 us after 100 us idle (the copies run on host CPUs)");
  const ds::LookNapRule unknown = ds::look_nap_rule(0, 1, false);
  EXPECT_TRUE(unknown.nap);
  EXPECT_EQ(unknown.line,
            "transfer loop: napping 20 us after 100 us idle (the CPUs this process may use are not known)");
}
