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
 */
export const SERVER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=8'];

/** The serving flags this process was started without (from its command line or NODE_OPTIONS). */
export function missingServerNodeFlags(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string = process.env['NODE_OPTIONS'] ?? '',
): string[] {
  const given = [...execArgv, ...nodeOptions.split(/\s+/)].map((a) => a.split('=')[0]!.replace(/_/g, '-'));
  return SERVER_NODE_FLAGS.filter((f) => !given.includes(f.split('=')[0]!));
}
