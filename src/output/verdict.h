// What a result answers, in one line, what to know before trusting its figures,
// and, when one run gives several answers to one question, how they rank. The text
// writer prints them after each block and at the end; JSON carries them too
// (docs/results.md "Verdicts, notes and the summary").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "output/result.h"

namespace ds {

// The thresholds the notes use (docs/results.md says why these).
// A measured stage timed on the host clock (sim's copy threads, aio, load) is too short
// below this: thread wake-ups and scheduling are tens of microseconds.
constexpr int64_t kHostClockFloorNs = 100 * 1000;
// A stage timed by device events is too short below this many times their resolution.
constexpr int kEventResolutionsFloor = 20;
// A stage's spread makes its mean unreliable when P90 / P50 is above kSpreadP90, or
// when max / P50 is above kSpreadMax and the slow iterations lift the mean above
// kSpreadMeanShift x P50.
constexpr double kSpreadP90 = 1.5;
constexpr double kSpreadMax = 10.0;
constexpr double kSpreadMeanShift = 1.1;
// BW and WallBW are told apart when one is more than this many times the other.
constexpr double kBwWallRatio = 2.0;

struct VerdictNote {
  std::string kind;  // "short_iteration", "spread", "bw_vs_wallbw"
  std::string text;  // one line, no prefix
};

struct Verdict {
  // "54.8 GiB/s per card (Copy); a request sees 2.20 GiB/s end to end (WallBW)"
  std::string text;
  std::vector<VerdictNote> notes;
};

Verdict verdict_of(const CaseResult& r);

// A bandwidth as people read it: three significant digits ("54.8", "2.20", "0.153", "133").
std::string gib_text(double gib_s);

// One result as the summary ranks it.
struct RankEntry {
  std::string group;  // results with the same group answer the same question
  std::string measured;
  uint64_t block_bytes = 0;
  std::string layout;
  std::string path;  // the direction (CaseResult::path): H2D and D2H never rank together
  std::string name, method;
  double gib_s = 0;
  bool noted = false;  // a note says its figure may not hold (too short, spread)
  bool paged = false;  // its blocks placed by a block table (copy --block-table, --host-block-table)
  int cards = 0;       // the cards it moved KV on at once (CaseResult::devices); 0: one store, not cards
};
RankEntry rank_entry(const CaseResult& r);

// Results answer the same question when they measured the same stage over blocks of
// the same size and layout, for the same request kind (--model), along the same path
// (CaseResult::path: host memory -> device, device -> host memory, ...), on as many
// cards at once (one card's figure against two cards' sum answers nothing), and,
// outside copy, between the same From and To: several -t cases, trans's combinations of one
// direction, aio engines; paged results (a block table's) only with the same tables,
// seed and pool. Sweep points differ in block size, H2D and D2H (trans's, and
// copy's -t cases) and aio's dump and load in direction, so none of them is ranked
// with the other.
struct Ranking {
  std::string measured;
  uint64_t block_bytes = 0;
  std::string layout;
  std::string path;
  std::vector<RankEntry> entries;  // best first
  bool paged = false;              // every entry placed by the same block tables
  int cards = 0;                   // every entry's
};
// Every group of at least two results, in the order its first result came, each
// best first (ties in the order they came).
std::vector<Ranking> rankings_of(const std::vector<RankEntry>& entries);

// What an entry is called in a ranking: its name, with its Method when another entry
// of the ranking has the same name (aio engines).
std::string ranked_name(const Ranking& ranking, size_t i);
// How far entry i is below the best, in percent (0 for the best; negative below it).
double percent_of_best(const Ranking& ranking, size_t i);

// Which method to use for a paged layout: a ranking of paged results, its best and
// how many times the next one's bandwidth it moves. `sim`: on the sim backend every
// method is the CPU's memcpy on sim's copy threads, which `note` says.
struct Fastest {
  std::string name, method, next;
  double gib_s = 0, next_gib_s = 0;
  double times_next = 0;  // best over next; 0 when the next moved nothing
  std::string note;       // "" or what the figures are on this backend
};
// False for a ranking that is not of paged results.
bool fastest_of(const Ranking& ranking, const std::string& backend, Fastest* out);


}  // namespace ds
