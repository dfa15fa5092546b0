/**
 * V8 settings a serving process should start with (node <flags> cli.js serve).
 *
 * --max-semi-space-size=8: a server's old generation is small (about 10 MB: weights and tensors
 * live outside the JS heap), and at tens of thousands of requests a second V8 grows the young
 * generation to its 16 MB maximum. Once the old generation's headroom is no larger than the young
 * generation, V8 starts incremental marking at once, so it ran a full mark-compact every 100-200
 * ms. With 8 MB semispaces scavenges come twice as often, each as cheap, and full collections
 * stay rare. Measured in-process at concurrency 32: 45k -> 52k rows/s, p99 2.0 -> 1.1 ms
 * (bench/RESULTS.md, session 4). NODE_OPTIONS accepts it too.
 *
 * --min-semi-space-size=8: the young generation starts at that size instead of 1 MB. A start
 * allocates tens of MB that mostly survive, and from 1 MB the young generation took 7 scavenges
 * and a mark-compact (15-18 ms) before a warm start was listening; from 8 MB, 3 scavenges. Under
 * load it had grown to 8 MB anyway (same scavenges per second at one caller). Warm start 42 ms
 * sooner, paired (bench/RESULTS.md, session 21).
 *
 * Both size the heap when the process starts; the bundle's entry point then sets them back to
 * their defaults so that Node can use its own modules' code cache (node-code-cache.ts).
 */
export const SERVER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=8', '--min-semi-space-size=8'];

/** The flags whose absence costs serving (a start without --min-semi-space-size is only slower). */
const SERVING_ONLY = ['--max-semi-space-size'];

/**
 * The serving flags this process was started without (from its command line or NODE_OPTIONS),
 * of those that change how it serves.
 */
export function missingServerNodeFlags(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string = process.env['NODE_OPTIONS'] ?? '',
): string[] {
  const name = (flag: string): string => flag.split('=')[0]!.replace(/_/g, '-');
  const given = [...execArgv, ...nodeOptions.split(/\s+/)].map(name);
  return SERVER_NODE_FLAGS.filter((f) => SERVING_ONLY.includes(name(f)) && !given.includes(name(f)));
}
