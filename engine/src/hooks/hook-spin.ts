/**
 * Whether a hook thread stays awake after a lone call, and for how long. Waking a thread asleep
 * in Atomics.wait costs the engine an `Atomics.notify` (13-18 µs on the 2-vCPU VM measured, the
 * woken vCPU's exit from halt inside it) per call; a thread that is polling its doorbell when the
 * next call comes needs none (hook-lanes.ts: the engine notifies only a thread that said it
 * sleeps). At c=1 a request's postprocess call follows its preprocess by about the model's
 * execution, and the next request's preprocess follows the postprocess by the client's round trip.
 *
 * The thread plans from the gap last seen between a lone call of that kind and the next ring (a
 * slowly decaying maximum of the gaps measured worse: one late call cost a dozen polls). A short
 * gap is polled through. A longer one, up to `wakeWithinMs`, is slept through on a timed wait that
 * ends `wakeBeforeMs` before the gap is over, and sooner by how late this thread's timed waits have
 * been ending (hook threads set their timer slack to 1 µs for it; the default 50 µs would end it
 * late, and some hosts wake a thread tens of µs late even so), then polled: the call finds the
 * thread awake without a core held through the whole gap. That matters beside an execution: a thread polling through it
 * takes the core the execution computes on (bench/RESULTS.md, session 20: a pass-through hook's
 * added p50 at c=1 in process 50-52 µs against 60 polled or woken, 77 against 94 while the host
 * ran slower, and 10 % less CPU per request). A longer gap sleeps until rung.
 *
 * A poll is worth it only when it is answered and costs a core only while it runs, so it is
 * bounded: by the gap (stretched a little for jitter), by a cap of its kind (`afterPreMs`,
 * `afterPostMs`; `wakePollMs` after a timed sleep), and by a backoff: a poll the ring did not come
 * within, or one the thread was taken off its core in (two looks more than `preemptedMs` apart:
 * more runnable threads than cores), skips the next 1, then 2, 4 ... 64 polls of its kind, timed
 * or not. A loaded machine therefore gets the thread that sleeps at once (bench/RESULTS.md,
 * session 15: an unconditional 100 µs poll cost 450 µs per request at load 5-9).
 */

/** What a poll ended with. */
export type SpinEnd = 'rung' | 'ranOut' | 'preempted';

export interface SpinLimits {
  /** The longest poll after a lone preprocess call (its postprocess follows the execution), ms. */
  readonly afterPreMs: number;
  /** The longest poll after a lone postprocess call (the next request's preprocess), ms. */
  readonly afterPostMs: number;
  /** A gap between two looks at the doorbell longer than this means the thread lost its core, ms. */
  readonly preemptedMs: number;
  /** How long before an expected call a timed sleep ends, ms (0 or absent: no timed sleeps). */
  readonly wakeBeforeMs?: number;
  /** The longest gap a timed sleep is planned for, ms; a longer one sleeps until rung. */
  readonly wakeWithinMs?: number;
  /** The longest poll after a timed sleep, ms. */
  readonly wakePollMs?: number;
}

export const SPIN_LIMITS: SpinLimits = {
  afterPreMs: 0.15,
  afterPostMs: 0.05,
  preemptedMs: 0.02,
  wakeBeforeMs: 0.03,
  wakeWithinMs: 2,
  wakePollMs: 0.1,
};

/** What a thread does after a lone call before it sleeps until rung: a timed sleep, then a poll (ms; 0: none). */
export interface SpinPlan {
  readonly sleepMs: number;
  readonly pollMs: number;
}

const SLEEP_AT_ONCE: SpinPlan = { sleepMs: 0, pollMs: 0 };
/** No poll at all (a pool's option, for tests and to switch it off). */
export const NO_SPIN: SpinLimits = { afterPreMs: 0, afterPostMs: 0, preemptedMs: 0 };

/** Polls skipped at most after polls in a row that were not answered. */
const BACKOFF_MAX = 64;
/** A poll lasts the gap last seen times this, plus SLACK_MS: a little jitter still finds it awake. */
const STRETCH = 1.25;
const SLACK_MS = 0.015;
/** The shortest timed sleep worth a timer; a shorter gap is polled through. */
const MIN_SLEEP_MS = 0.04;
/**
 * How late timed sleeps end is learned (a moving average, each sleep weighing LATE_WEIGHT, at most
 * LATE_MAX_MS) and a sleep ends that much sooner. With 1 µs of timer slack one host ended them 5-10
 * µs late, another 31-56 µs (p50; bench/RESULTS.md, session 26): there the 30 µs margin was gone,
 * and the call found the thread still asleep.
 */
const LATE_WEIGHT = 1 / 8;
const LATE_MAX_MS = 0.2;

type Kind = 'preprocess' | 'postprocess';

/** One kind's gap last seen (ms; NaN: none yet) and backoff. */
interface KindState {
  gap: number;
  skips: number;
  backoff: number;
}

export class SpinPolicy {
  readonly #limits: SpinLimits;
  readonly #kinds: Record<Kind, KindState> = {
    preprocess: { gap: NaN, skips: 0, backoff: 0 },
    postprocess: { gap: NaN, skips: 0, backoff: 0 },
  };
  /** How late the timed sleeps ended, averaged (ms). */
  #late = 0;
  /** Polls made, answered, run out and cut short by a lost core (for tests and benchmarks). */
  readonly counts = { spins: 0, rung: 0, ranOut: 0, preempted: 0, skipped: 0 };

  constructor(limits: SpinLimits = SPIN_LIMITS) {
    this.#limits = limits;
  }

  /** The gap seen from the end of a lone call of `kind` to the ring that came next. */
  sawGap(kind: Kind, ms: number): void {
    if (ms >= 0) this.#kinds[kind].gap = ms;
  }

  /** A timed sleep that ran its course ended `ms` after it was due. */
  sawLateSleep(ms: number): void {
    this.#late += (Math.min(Math.max(ms, 0), LATE_MAX_MS) - this.#late) * LATE_WEIGHT;
  }

  /** How late timed sleeps end, as learned so far (ms). */
  get lateSleepMs(): number {
    return this.#late;
  }

  /** What to do after a lone call of `kind` before sleeping until rung. */
  plan(kind: Kind): SpinPlan {
    const cap = kind === 'preprocess' ? this.#limits.afterPreMs : this.#limits.afterPostMs;
    if (!(cap > 0)) return SLEEP_AT_ONCE;
    const k = this.#kinds[kind];
    const margin = this.#limits.wakeBeforeMs ?? 0;
    const before = margin > 0 ? margin + this.#late : 0;
    // A gap long enough to sleep through most of it, and not too long to foresee.
    const timed = before > 0 && k.gap - before >= MIN_SLEEP_MS && k.gap <= (this.#limits.wakeWithinMs ?? 0);
    // Unknown: one poll up to the cap finds out (the ring that ends it, or the wake, gives the gap).
    if (k.gap > cap && !timed) return SLEEP_AT_ONCE;
    if (k.skips > 0) {
      k.skips--;
      this.counts.skipped++;
      return SLEEP_AT_ONCE;
    }
    if (Number.isNaN(k.gap)) return { sleepMs: 0, pollMs: cap };
    const until = k.gap * STRETCH + SLACK_MS;
    if (!timed) return { sleepMs: 0, pollMs: Math.min(cap, until) };
    const sleepMs = k.gap - before;
    return { sleepMs, pollMs: Math.min(this.#limits.wakePollMs ?? 0, until - sleepMs) };
  }

  /** How a poll after a call of `kind` ended: an answered one clears its backoff, any other doubles it. */
  ended(kind: Kind, end: SpinEnd): void {
    this.counts.spins++;
    this.counts[end]++;
    const k = this.#kinds[kind];
    if (end === 'rung') {
      k.backoff = 0;
      return;
    }
    k.backoff = Math.min(BACKOFF_MAX, Math.max(1, 2 * k.backoff));
    k.skips = k.backoff;
  }
}

/**
 * Polls `words[index]` until it is no longer `seen`, for up to `ms`; 'preempted' as soon as two
 * looks are more than `preemptedMs` apart. `now` is the clock (performance.now() unless a test's).
 */
export function spinWhile(
  words: Int32Array,
  index: number,
  seen: number,
  ms: number,
  preemptedMs: number,
  now: () => number = () => performance.now(),
): SpinEnd {
  let last = now();
  const until = last + ms;
  for (;;) {
    if (Atomics.load(words, index) !== seen) return 'rung';
    const t = now();
    if (t - last > preemptedMs) return Atomics.load(words, index) !== seen ? 'rung' : 'preempted';
    if (t >= until) return Atomics.load(words, index) !== seen ? 'rung' : 'ranOut';
    last = t;
  }
}
