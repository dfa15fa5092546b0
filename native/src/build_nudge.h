// While a model build runs on the lowered background threads, one thread per CPU wakes every
// `period` and sleeps again at once, so each CPU passes through the scheduler that often.
//
// Why: a serving thread woken onto a CPU where a SCHED_IDLE compile thread runs gets the CPU only
// when the scheduler next picks, and Linux's EEVDF picks the idle thread again whenever the woken
// one has used more than its share (negative lag): the next pick is then the scheduler tick, up
// to 4 ms later at HZ=250. A reload of model B made model A's requests wait 1-8 ms that way (p99
// 4x its level alone; perf trace in bench/RESULTS.md, session 12). A nudge is a non-idle thread
// waking on that CPU: the idle thread is preempted, its runtime charged, and the waiting serving
// thread, now eligible, runs. The nudge threads run at SCHED_BATCH, which preempts an idle thread
// but never a normal one. Only while a build runs, so a server not building pays nothing.
//
// Confinement: while a build overlaps serving work and the process has two CPUs or more, every
// SCHED_IDLE thread of the process (the build pool and XLA's compile helpers) is held off the
// first CPU, and that CPU is not nudged: a serving thread that runs or wakes there never waits
// behind a build thread or pays for a nudge's timer. Lifted as soon as the builds end or serving
// stops for 20 ms, so a start (nothing serving) compiles on every CPU. Why: the kernel places a
// woken serving thread on a CPU running only SCHED_IDLE threads as readily as on an idle one, so
// only a CPU without build threads is free of these waits. Confined, with 500 µs nudges on the
// other CPUs, A's waits over 1 ms behind a build thread fell from 6.0 to 2.4 per second of reload
// (bench/reload-waits.mjs, bench/RESULTS.md session 13).
//
// Two-way (`confine_serving`, opt-in): the build keeps the last CPU only and every
// SCHED_OTHER thread of the process (the JS thread, V8's and libuv's pools, the serving pool, the
// PJRT client's threads, hook threads) keeps the others, so no serving thread can wake behind a
// build at all, and no CPU is nudged while it holds. Why: with the build alone confined, serving
// threads still woke behind it on its CPUs and waited up to a nudge period, about 1 % of A's
// requests during a reload, which set A's p99. The cost: on two CPUs serving has one CPU while a
// build overlaps it, and a model that needs more than one lost more than it gained there (A's p99
// ratio 3.97 against 2.79, bench/RESULTS.md session 16), hence opt-in.
#pragma once

#include <cstdint>

namespace hlo {

// Starts the nudge threads (parked until a build begins). Call once, from a thread at the
// process's normal priority (threads inherit their creator's policy, and a SCHED_IDLE thread
// cannot create a normal one). `period_us` 0 = off; `confine`: hold builds off the first CPU while
// they overlap serving work (above). Returns the number of threads started.
// `confined_period_us` replaces `period_us` where confinement is in force (two CPUs or more).
int StartBuildNudger(int64_t period_us, int64_t confined_period_us, bool confine, bool confine_serving);
// The period in force (µs; 0: not started).
int64_t BuildNudgeMicros();
// Each StartBuildNudger that started or joined it calls this once at teardown; the last one stops
// and joins the threads (one addon instance per Node environment, one nudger per process).
void StopBuildNudger();
// Nudges so far (tests read it to see the nudger runs during a build and stops after).
uint64_t BuildNudges();
// How many times builds were confined so far, and the CPU kept for serving (-1: no confinement).
uint64_t BuildConfinements();
int BuildServingCpu();
// Whether confinement also holds the process's serving threads off the build's CPU.
bool BuildConfinesServing();

// Called as each serving execution is issued: nudging at full rate is for builds that overlap
// serving work; a build with nothing serving is checked on every 5 ms only (a wake-up costs
// 20-60 µs of CPU on this project's VM: 1.5 % of a CPU at 1 ms, 6 % at 250 µs).
void NoteServingActivity();

// Held by each build task on the background pool: nudging runs while any is held.
class BuildNudgeScope {
 public:
  BuildNudgeScope();
  ~BuildNudgeScope();
  BuildNudgeScope(const BuildNudgeScope&) = delete;
  BuildNudgeScope& operator=(const BuildNudgeScope&) = delete;
};

}  // namespace hlo
