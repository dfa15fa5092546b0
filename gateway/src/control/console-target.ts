/**
 * Which worker a console request goes to. The console names one with the `worker` query parameter
 * (the only way a browser WebSocket can) or, for REST, the `x-hloserve-worker` header; a request
 * that names none goes to the first ready worker with a console, by name, as before the console
 * learned the fleet. The name is checked before anything is forwarded: a malformed one is 400, an
 * unknown one 404, a known worker that is not ready or has no console port 503.
 */
import { ServeError } from '@hloserve/common/errors';
import type { Gateway } from '../gateway.js';
import type { WorkerClient } from '../worker-client.js';

/** Worker names as node.yaml and the gateway config spell them (`worker0`, `gpu-1`, `w.a`). */
const WORKER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
export const WORKER_PARAM = 'worker';
export const WORKER_HEADER = 'x-hloserve-worker';

export interface ConsoleTarget {
  readonly worker: WorkerClient;
  /** The request's path and query without the `worker` parameter: the worker sees its own API. */
  readonly url: string;
}

/** The first ready worker with a console, by name: the default target. */
export function defaultConsoleWorker(gw: Gateway): WorkerClient | null {
  const ws = [...gw.fleet.workers.values()].filter((w) => w.ready && w.address.console);
  ws.sort((a, b) => (a.name < b.name ? -1 : 1));
  return ws[0] ?? null;
}

/** The worker name a request carries (query first, then header), or null when it names none. */
export function namedWorker(rawUrl: string, header: string | string[] | undefined): string | null {
  const url = new URL(rawUrl, 'http://gateway.invalid');
  const fromQuery = url.searchParams.getAll(WORKER_PARAM);
  if (fromQuery.length > 1)
    throw new ServeError(
      'HLO_ERR_INVALID_ARGUMENT',
      `name one worker: '${WORKER_PARAM}' is given ${fromQuery.length} times`,
    );
  if (Array.isArray(header))
    throw new ServeError(
      'HLO_ERR_INVALID_ARGUMENT',
      `name one worker: ${WORKER_HEADER} is given ${header.length} times`,
    );
  const name = fromQuery[0] ?? header;
  if (name === undefined) return null;
  if (!WORKER_NAME.test(name))
    throw new ServeError(
      'HLO_ERR_INVALID_ARGUMENT',
      `'${name.slice(0, 80)}' is not a worker name (1 to 64 of A-Z a-z 0-9 . _ -, starting with a letter or digit)`,
    );
  return name;
}

/** Resolves a console request's target; throws the catalogue's error when it cannot be served. */
export function consoleTarget(gw: Gateway, rawUrl: string, header: string | string[] | undefined): ConsoleTarget {
  const name = namedWorker(rawUrl, header);
  let worker: WorkerClient | null;
  if (name === null) {
    worker = defaultConsoleWorker(gw);
    if (!worker) throw new ServeError('HLO_ERR_SHUTTING_DOWN', 'no worker with a console is ready');
  } else {
    worker = gw.fleet.workers.get(name) ?? null;
    if (!worker)
      throw new ServeError(
        'HLO_ERR_NOT_FOUND',
        `no worker '${name}' in this fleet (workers: ${[...gw.fleet.workers.keys()].sort().join(', ')})`,
      );
    if (!worker.address.console) throw new ServeError('HLO_ERR_SHUTTING_DOWN', `worker '${name}' has no console port`);
    if (!worker.ready) throw new ServeError('HLO_ERR_SHUTTING_DOWN', `worker '${name}' is not ready`);
  }
  return { worker, url: withoutWorkerParam(rawUrl) };
}

function withoutWorkerParam(rawUrl: string): string {
  const q = rawUrl.indexOf('?');
  if (q < 0) return rawUrl;
  const params = new URLSearchParams(rawUrl.slice(q + 1));
  if (!params.has(WORKER_PARAM)) return rawUrl;
  params.delete(WORKER_PARAM);
  const rest = params.toString();
  return rawUrl.slice(0, q) + (rest ? `?${rest}` : '');
}
