// Running one worker per device: inline, in threads, or in forked children
// (docs/measurement.md, "Fan-out and processes"). Backend-neutral: the worker
// body does all runtime work itself.
#pragma once

#include <functional>
#include <string>

#include "runner/barrier.h"

namespace ds {

enum class Fanout { kInline, kThreads, kFork };

// Runs body(worker) for worker in [0, count). The barrier must be shared with the
// workers (for kFork: in a SharedMapping made before this call). When a worker
// fails, the barrier is aborted, the others are stopped (children: SIGKILL after a
// grace period), and a RunError naming the first failing worker is thrown.
// Ctrl-C stops all workers and throws Interrupted.
//
// `watch`, when given, is called about every 50 ms while forked children run;
// a non-empty answer (a worker made no progress for too long) kills every child
// at once, without a grace period, and becomes the RunError, as it is. Workers
// that run in this process (inline, threads) are not watched: the timed loop
// always runs those in an isolated child. `name` names a failed forked worker
// ("device 3: ...").
using Watch = std::function<std::string()>;
void run_workers(Fanout fanout, int count, const std::function<void(int)>& body, Barrier& barrier,
                 const Watch& watch = {}, const std::string& name = "device");

// Runs body() in one child process and waits for it, with the same failure and
// Ctrl-C handling; its error message comes back unchanged. Used so that this
// process never initialises an accelerator runtime it may later fork from.
void run_isolated(const std::function<void()>& body, Barrier& barrier, const Watch& watch = {});

}  // namespace ds
