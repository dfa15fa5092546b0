/**
 * Whether a program may wait on the client's own thread pool from inside it. The CPU plugin's FFT
 * does (it hands pieces to the pool and blocks a pool thread until they are done: two at once
 * stopped a synchronous client for good, bench/RESULTS.md session 14), and a custom call can do
 * anything. Such a program runs alone on a client that serializes its executions; any other may
 * run beside them (ExecuteOptions.besideOthers).
 *
 * Read from the module's bytes, text or bytecode alike (both hold op names as plain strings). A
 * false "yes" (the letters in a constant) only keeps the program on the safe path.
 */
export function mayWaitOnClientPool(module: Uint8Array): boolean {
  const bytes = Buffer.from(module.buffer, module.byteOffset, module.byteLength);
  return MARKERS.some((m) => bytes.includes(m));
}

const MARKERS: readonly string[] = ['fft', 'FFT', 'Fft', 'custom_call'];
