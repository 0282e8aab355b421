// "did you mean": the edit distance and when a name is close enough to suggest.
#include <gtest/gtest.h>

#include "core/suggest.h"

namespace {

TEST(Suggest, EditDistanceCountsInsertionsDeletionsSubstitutionsAndSwaps) {
  EXPECT_EQ(ds::edit_distance("copy", "copy"), 0u);
  EXPECT_EQ(ds::edit_distance("cpy", "copy"), 1u);          // a deletion
  EXPECT_EQ(ds::edit_distance("coppy", "copy"), 1u);        // an insertion
  EXPECT_EQ(ds::edit_distance("cope", "copy"), 1u);         // a substitution
  EXPECT_EQ(ds::edit_distance("--iodpeth", "--iodepth"), 1u);  // neighbours swapped
  EXPECT_EQ(ds::edit_distance("", "abc"), 3u);
}

TEST(Suggest, OnlyATypoIsSuggestedAndTheClosestWins) {
  const std::vector<std::string> subs = {"copy", "trans", "aio", "load", "doctor"};
  EXPECT_EQ(ds::closest("cpy", subs), "copy");
  EXPECT_EQ(ds::closest("lod", subs), "load");
  EXPECT_EQ(ds::closest("benchmark", subs), "");  // nothing close
  EXPECT_EQ(ds::closest("copy", subs), "");       // not a typo
  EXPECT_EQ(ds::did_you_mean("trnas", subs), " (did you mean trans?)");
  EXPECT_EQ(ds::did_you_mean("xyz", subs), "");
}

}  // namespace
