import assert from 'node:assert/strict';
import { after, before, suite, test } from 'node:test';
import { InferenceClient, tensor } from '@hloserve/client';
import { startServer, type ServerProcess } from '../src/server-process.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A caller as KServe clients are meant to be: the gateway never re-sends a call a dying worker
 * cut off (it may have run), it answers UNAVAILABLE, and the client, which knows its call may be
 * repeated, retries UNAVAILABLE (@hloserve/client does by default; the backoff is shortened here).
 * The deadline covers a hung worker holding a call until the supervisor kills it (~12 s).
 */
const callerClient = (url: string) =>
  new InferenceClient({ url, timeoutMs: 60_000, retry: { initialBackoffMs: 50, maxBackoffMs: 500 } });

const series = (text: string, name: string): number => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1] ?? 0);

/** worker name -> pid, from the workers' own startup records. */
function workerPids(logs: readonly string[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const l of logs) {
    const m = /"msg":"worker started","name":"(worker\d)","pid":(\d+)/.exec(l);
    if (m) out.set(m[1]!, Number(m[2]));
  }
  return out;
}

/** mlp's replicas as the gateway's placement gauge lists them. */
const mlpReplicas = (metricsText: string): string[] =>
  [...metricsText.matchAll(/^hloserve_gateway_placement\{model="mlp",worker="(\w+)"\} 1/gm)].map((m) => m[1]!);

/** `n` closed-loop callers on mlp through the gateway, counting answers and failures until stopped. */
function callers(url: string, n: number) {
  const x = { x: tensor(new Float32Array(784).fill(0.5), [1, 784]) };
  const load = { ok: 0, failures: [] as string[], stop: async () => {} };
  let running = true;
  const caller = async () => {
    const c = callerClient(url);
    const mlp = c.model('mlp');
    while (running) {
      try {
        await mlp.infer(x);
        load.ok++;
      } catch (err) {
        load.failures.push((err as Error).message);
      }
    }
    await c.close();
  };
  const all = Array.from({ length: n }, caller);
  load.stop = async () => {
    running = false;
    await Promise.all(all);
  };
  return load;
}

suite('faults behind the gateway: kill -9 a worker under load', () => {
  let server: ServerProcess;
  before(async () => {
    server = await startServer({ HLOSERVE_MODELS_INCLUDE: 'mlp' }, 300_000, [
      '--workers',
      '3',
      '--base-port',
      '0',
      '--routing',
      'lpt_packing',
      '--replicas',
      'mlp=2',
      '--spares',
      '1',
    ]);
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  test('16 callers on a model with two replicas: zero failed requests, the worker back within 5 s', async (t) => {
    const metricsUrl = `http://127.0.0.1:${server.ports.metrics}/metrics`;
    const placed = async () => mlpReplicas(await (await fetch(metricsUrl)).text());
    const replicas = await placed();
    assert.equal(replicas.length, 2, `mlp placed on two workers: ${replicas}`);
    const victim = replicas[0]!;

    const load = callers(server.grpcUrl(), 16);
    await sleep(1500);
    const before = load.ok;
    const pid = workerPids(server.logs).get(victim);
    assert.ok(pid, `pid of ${victim}`);
    const killedAt = Date.now();
    process.kill(pid, 'SIGKILL');
    // Back: a warm spare took the name, and the gateway's health round found it ready.
    let backMs = -1;
    const readyRe = new RegExp(`^hloserve_gateway_worker_ready\\{worker="${victim}"\\} 1`, 'm');
    while (Date.now() - killedAt < 30_000) {
      const replaced = server.logs.some(
        (l) => l.includes('a spare takes its place') && l.includes(`"name":"${victim}"`),
      );
      if (replaced && readyRe.test(await (await fetch(metricsUrl)).text())) {
        backMs = Date.now() - killedAt;
        break;
      }
      await sleep(50);
    }
    await sleep(3000);
    await load.stop();
    const { ok, failures } = load;
    assert.deepEqual(failures.slice(0, 5), [], `${failures.length} failed requests`);
    assert.ok(ok > before, 'requests kept completing');
    assert.ok(backMs > 0 && backMs <= 5000, `${victim} back in ${backMs} ms`);
    assert.deepEqual((await placed()).sort(), replicas.sort(), 'the placement still holds both replicas');
    const text = await (await fetch(metricsUrl)).text();
    const [retries, dropped] = [
      series(text, 'hloserve_gateway_retries_total'),
      series(text, 'hloserve_gateway_dropped_total'),
    ];
    // Only calls the victim held can have been cut off: at most the 16 callers' worth.
    assert.ok(dropped <= 16, `${dropped} calls cut off mid-way`);
    t.diagnostic(
      `${ok} requests ok, ${failures.length} failed; ${dropped} cut off mid-way (UNAVAILABLE, retried by the client), ` +
        `${retries} failed over before running; ${victim} back in ${backMs} ms`,
    );
  });

  test('a worker that hangs (SIGSTOP) is detected by health, killed and replaced; the replicated model never fails', async (t) => {
    const metricsUrl = `http://127.0.0.1:${server.ports.metrics}/metrics`;
    const replicas = mlpReplicas(await (await fetch(metricsUrl)).text());
    // worker0 was replaced by a spare in the test above; hang the other replica.
    const victim = replicas.find((w) => w !== 'worker0') ?? replicas[1]!;
    const pid = workerPids(server.logs).get(victim);
    assert.ok(pid, `pid of ${victim}`);
    const load = callers(server.grpcUrl(), 4);
    await sleep(1000);
    const stoppedAt = Date.now();
    process.kill(pid, 'SIGSTOP');
    let detectedMs = -1;
    let backMs = -1;
    const readyRe = new RegExp(`^hloserve_gateway_worker_ready\\{worker="${victim}"\\} 1`, 'm');
    while (Date.now() - stoppedAt < 90_000) {
      if (
        detectedMs < 0 &&
        server.logs.some((l) => l.includes('stopped answering health') && l.includes(`"name":"${victim}"`))
      )
        detectedMs = Date.now() - stoppedAt;
      if (detectedMs >= 0 && readyRe.test(await (await fetch(metricsUrl)).text())) {
        backMs = Date.now() - stoppedAt;
        break;
      }
      await sleep(100);
    }
    await sleep(1000);
    await load.stop();
    const { ok, failures } = load;
    t.diagnostic(
      `${ok} requests ok, ${failures.length} failed; hang detected after ${detectedMs} ms, serving again after ${backMs} ms`,
    );
    assert.ok(detectedMs > 0, 'the hang was detected');
    assert.ok(backMs > 0, 'the worker serves again');
    assert.deepEqual(failures.slice(0, 5), [], `${failures.length} failed requests`);
  });
});
