// The fuzz targets' checked-in corpora (tests/fuzz/corpus/<target>/: seeds, and every
// crash or interesting input the fuzzers found), replayed in the normal suite through
// the same target functions, without libFuzzer or clang. Each target's
// LLVMFuzzerTestOneInput is compiled here under the name ds_fuzz_<target>
// (tests/CMakeLists.txt); a failing property aborts, naming the corpus file first.
#include <gtest/gtest.h>

#include <dirent.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "fuzz_targets.h"  // DS_FUZZ_TARGET_LIST(X), written by tests/CMakeLists.txt

#define DS_DECLARE(t) extern "C" int ds_fuzz_##t(const uint8_t*, size_t);
DS_FUZZ_TARGET_LIST(DS_DECLARE)
#undef DS_DECLARE

namespace {

using Target = std::pair<std::string, int (*)(const uint8_t*, size_t)>;

std::vector<Target> targets() {
  std::vector<Target> v;
#define DS_ENTRY(t) v.emplace_back(#t, &ds_fuzz_##t);
  DS_FUZZ_TARGET_LIST(DS_ENTRY)
#undef DS_ENTRY
  return v;
}

class Replay : public ::testing::TestWithParam<Target> {};

TEST_P(Replay, EveryCorpusFileKeepsTheTargetsProperties) {
  const std::string dir = std::string(DS_FUZZ_CORPUS) + "/" + GetParam().first;
  DIR* d = opendir(dir.c_str());
  ASSERT_NE(d, nullptr) << "no corpus at " << dir;
  std::vector<std::string> files;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') files.push_back(dir + "/" + e->d_name);
  closedir(d);
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty()) << "empty corpus at " << dir;
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    ASSERT_TRUE(in) << path;
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::fprintf(stderr, "replaying %s\n", path.c_str());  // named before a crash
    EXPECT_EQ(GetParam().second(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), 0) << path;
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, Replay, ::testing::ValuesIn(targets()),
                         [](const ::testing::TestParamInfo<Target>& i) { return i.param.first; });

}  // namespace
