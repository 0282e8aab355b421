// Layouts: -s/-n/-f as a uniform layout, heterogeneous tasks, and what is refused.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "layout/block_table.h"
#include "layout/layout.h"

namespace {

using ds::Fragment;
using ds::Layout;

// Every fragment of `l`, in order.
std::vector<Fragment> all_fragments(const Layout& l) {
  std::vector<Fragment> out;
  for (uint64_t i = 0; i < l.fragments(); ++i) out.push_back(l.fragment(i));
  return out;
}

struct UniformCase {
  uint64_t s, n;
  int f;
};

class LayoutUniform : public ::testing::TestWithParam<UniformCase> {};

TEST_P(LayoutUniform, ReproducesSizeCountAndFrags) {
  const UniformCase c = GetParam();
  const Layout l = Layout::uniform(c.s, c.n, c.f);
  const uint64_t per_task = c.f < 1 ? 1 : static_cast<uint64_t>(c.f);
  EXPECT_EQ(l.tasks(), c.n);
  EXPECT_EQ(l.fragments_per_task(), per_task);
  EXPECT_EQ(l.fragments(), c.n * per_task);
  EXPECT_EQ(l.task_bytes(), c.s * per_task);
  EXPECT_EQ(l.bytes(), c.s * c.n * per_task);
  EXPECT_EQ(l.largest_fragment(), c.s);
  EXPECT_EQ(l.unit_bytes(), c.s) << "Size(KB) is one fragment";
  EXPECT_EQ(l.units(), c.n * per_task) << "Count = n x max(1, f)";
  EXPECT_EQ(l.frags_option(), c.f) << "the -f given, 0 included";
  const std::vector<Fragment> frags = all_fragments(l);
  for (uint64_t i = 0; i < frags.size(); ++i) {
    EXPECT_EQ(frags[i].offset, i * c.s) << "fragment " << i;
    EXPECT_EQ(frags[i].bytes, c.s) << "fragment " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Options, LayoutUniform,
                         ::testing::Values(UniformCase{4096, 8, 0}, UniformCase{4096, 8, 1}, UniformCase{1000, 3, 4},
                                           UniformCase{1, 1, 0}, UniformCase{65536, 5, 12}),
                         [](const ::testing::TestParamInfo<UniformCase>& i) {
                           return "s" + std::to_string(i.param.s) + "_n" + std::to_string(i.param.n) + "_f" +
                                  std::to_string(i.param.f);
                         });

TEST(Layout, HeterogeneousTasksCountedPerTask) {
  const Layout l({100, 300, 50}, 4, false);
  EXPECT_EQ(l.tasks(), 4u);
  EXPECT_EQ(l.fragments_per_task(), 3u);
  EXPECT_EQ(l.fragments(), 12u);
  EXPECT_EQ(l.task_bytes(), 450u);
  EXPECT_EQ(l.bytes(), 1800u);
  EXPECT_EQ(l.largest_fragment(), 300u);
  EXPECT_EQ(l.unit_bytes(), 450u) << "Size(KB) is one task";
  EXPECT_EQ(l.units(), 4u) << "Count is the tasks";
  EXPECT_EQ(l.frags_option(), 3);
  // Back to back: within a task at 0, 100, 400; each task 450 further on.
  const uint64_t within[] = {0, 100, 400};
  const uint64_t sizes[] = {100, 300, 50};
  const std::vector<Fragment> frags = all_fragments(l);
  for (uint64_t i = 0; i < frags.size(); ++i) {
    EXPECT_EQ(frags[i].offset, (i / 3) * 450 + within[i % 3]) << "fragment " << i;
    EXPECT_EQ(frags[i].bytes, sizes[i % 3]) << "fragment " << i;
  }
  EXPECT_EQ(frags.back().offset + frags.back().bytes, l.bytes()) << "the last fragment ends the region";
}

TEST(Layout, EqualFragmentsCountedPerFragment) {
  const Layout l({512, 512}, 3, true);
  EXPECT_EQ(l.unit_bytes(), 512u);
  EXPECT_EQ(l.units(), 6u);
  EXPECT_EQ(l.bytes(), 3072u);
  EXPECT_EQ(l.fragment(5).offset, 2560u);
}

TEST(Layout, RefusesEmptyZeroAndOverflow) {
  EXPECT_THROW(Layout({}, 1, false), ds::UsageError);
  EXPECT_THROW(Layout({4096}, 0, false), ds::UsageError);
  EXPECT_THROW(Layout({4096, 0, 4096}, 1, false), ds::UsageError);
  const uint64_t big = std::numeric_limits<uint64_t>::max() / 2 + 1;
  EXPECT_THROW(Layout({big, big}, 1, false), ds::UsageError) << "one task's bytes overflow";
  EXPECT_THROW(Layout({big}, 2, false), ds::UsageError) << "the tasks' bytes overflow";
  EXPECT_THROW(Layout::uniform(1ULL << 40, 1ULL << 30, 1), ds::UsageError);
  EXPECT_NO_THROW(Layout({big - 1}, 1, false));
}

TEST(Layout, RefusesMixedSizesOnlyWhenCountedPerFragment) {
  EXPECT_THROW(Layout({4096, 8192}, 2, true), ds::UsageError);
  EXPECT_NO_THROW(Layout({4096, 8192}, 2, false));
}

}  // namespace

namespace {

// --block-layout: Size is the block, Count the tasks, and each fragment kind (K,
// V, indexer ...) has its own region, as the tensors of a KV cache do.
TEST(Layout, BlockLayoutPutsEachFragmentKindInItsOwnRegion) {
  const Layout l = Layout::block({100, 300, 50}, 4);
  EXPECT_TRUE(l.per_fragment_regions());
  EXPECT_EQ(l.unit_bytes(), 450u);
  EXPECT_EQ(l.units(), 4u);
  EXPECT_EQ(l.fragments(), 12u);
  EXPECT_EQ(l.bytes(), 1800u);
  // Regions: 4 x 100 at 0, 4 x 300 at 400, 4 x 50 at 1600.
  const uint64_t starts[] = {0, 400, 1600};
  const uint64_t sizes[] = {100, 300, 50};
  std::vector<bool> covered(1800, false);
  for (uint64_t i = 0; i < l.fragments(); ++i) {
    const Fragment f = l.fragment(i);
    EXPECT_EQ(f.bytes, sizes[i % 3]) << i;
    EXPECT_EQ(f.offset, starts[i % 3] + (i / 3) * sizes[i % 3]) << i;
    for (uint64_t b = f.offset; b < f.offset + f.bytes; ++b) {
      EXPECT_FALSE(covered[b]) << "fragments overlap at " << b;
      covered[b] = true;
    }
  }
  EXPECT_EQ(std::count(covered.begin(), covered.end(), true), 1800) << "every byte of the region is one fragment's";
}

}  // namespace

// Block tables (layout/block_table.h) and a layout placed in a paged pool.
namespace {

using ds::BlockTable;
using ds::make_block_table;

TEST(BlockTable, SequentialIsTheContiguousCase) {
  const BlockTable t = make_block_table("sequential", 5, 0);
  EXPECT_EQ(t.slots, (std::vector<uint64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(t.pool, 20u);  // the request four times over
  EXPECT_EQ(t.label, "sequential");
}

// The same seed gives the same table on every platform (mt19937_64's output is the
// standard's, the draw and the shuffle are ours): these values are the table. (Since
// the shuffle runs front to back without the pool, not the whole pool back to front.)
TEST(BlockTable, RandomIsASeededShuffleOfThePool) {
  const BlockTable t = make_block_table("random:7", 6, 0);
  EXPECT_EQ(t.slots, (std::vector<uint64_t>{15, 16, 22, 12, 5, 9}));
  EXPECT_EQ(t.pool, 24u);
  EXPECT_EQ(t.label, "random:7");
  EXPECT_EQ(make_block_table("random", 4, 5).slots, (std::vector<uint64_t>{3, 0, 2, 1}));
  EXPECT_EQ(make_block_table("random", 4, 5).label, "random:1");
  // A whole pool: every slot once.
  BlockTable all = make_block_table("random:99", 1000, 1000);
  std::sort(all.slots.begin(), all.slots.end());
  for (uint64_t s = 0; s < 1000; ++s) ASSERT_EQ(all.slots[s], s);
  EXPECT_NE(make_block_table("random:99", 1000, 1000).slots, all.slots) << "not shuffled";
}

// A pool far larger than the request is never materialised: 16 slots of a pool of a
// billion (or of 2^64 - 1) are 16 draws, distinct, in the pool, the same for a seed;
// a prefix of a longer table (the shuffle settles its places in order).
TEST(BlockTable, RandomDrawsTheRequestsSlotsWithoutThePool) {
  for (const uint64_t pool : {uint64_t{1000000000}, UINT64_MAX}) {
    const BlockTable t = make_block_table("random:3", 16, pool);
    ASSERT_EQ(t.slots.size(), 16u);
    EXPECT_EQ(t.pool, pool);
    std::vector<uint64_t> sorted = t.slots;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "a slot drawn twice";
    for (uint64_t s : t.slots) EXPECT_LT(s, pool);
    EXPECT_EQ(make_block_table("random:3", 16, pool).slots, t.slots);
    EXPECT_NE(make_block_table("random:4", 16, pool).slots, t.slots);
    const BlockTable longer = make_block_table("random:3", 40, pool);
    EXPECT_TRUE(std::equal(t.slots.begin(), t.slots.end(), longer.slots.begin()));
  }
  EXPECT_EQ(make_block_table("random:3", 16, 1000000000).slots[0], 671831467u);
  // Every slot of a small pool still comes out once, shuffled.
  BlockTable all = make_block_table("random:5", 7, 7);
  std::sort(all.slots.begin(), all.slots.end());
  EXPECT_EQ(all.slots, (std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6}));
}

TEST(LayoutPaged, UniformTasksMoveToTheirSlots) {
  // 3 tasks of 2 fragments of 100 bytes, groups of one task, slots 4, 0, 2 of 5.
  const Layout l = Layout::uniform(100, 3, 2).paged({4, 0, 2}, 5, 1);
  EXPECT_TRUE(l.is_paged());
  EXPECT_EQ(l.bytes(), 600u);          // what is moved: unchanged
  EXPECT_EQ(l.region_bytes(), 1000u);  // the pool: 5 slots of a 200-byte task
  EXPECT_EQ(l.fragment(0).offset, 800u);  // task 0 at slot 4
  EXPECT_EQ(l.fragment(1).offset, 900u);
  EXPECT_EQ(l.fragment(2).offset, 0u);    // task 1 at slot 0
  EXPECT_EQ(l.fragment(5).offset, 500u);  // task 2 at slot 2, its second fragment
  EXPECT_EQ(l.fragment(5).bytes, 100u);
}

TEST(LayoutPaged, BlockRegionsAreThePoolsAndGroupsMoveTogether) {
  // A block layout (K 64, V 32 each in its own region), 4 tasks in groups of 2 (two
  // layers per block file): block 0 at slot 3, block 1 at slot 1, a pool of 4 blocks.
  const Layout l = Layout::block({64, 32}, 4).paged({3, 1}, 4, 2);
  EXPECT_EQ(l.region_bytes(), 4u * 2u * 96u);
  // K region: 8 task places of 64; V region starts after it.
  EXPECT_EQ(l.fragment(0).offset, (3u * 2 + 0) * 64);  // block 0, task 0, K
  EXPECT_EQ(l.fragment(3).offset, 8u * 64 + (3u * 2 + 1) * 32);  // block 0, task 1, V
  EXPECT_EQ(l.fragment(4).offset, (1u * 2 + 0) * 64);  // block 1, task 2, K
  EXPECT_EQ(l.fragment(7).offset, 8u * 64 + (1u * 2 + 1) * 32);
  EXPECT_THROW(Layout::block({64, 32}, 4).paged({3}, 4, 2), ds::UsageError);
}

}  // namespace
