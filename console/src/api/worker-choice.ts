/**
 * Which worker's screens the console shows, behind a gateway. The choice lives in the page's URL
 * (`?worker=NAME`), so two tabs can watch two workers and a link keeps it; it is read from there
 * each time, never copied. Every control API call and the feed carry it to the gateway, which
 * passes them to that worker (docs/console.md, "Behind a gateway"); the query keys carry it so
 * one worker's data is never shown under another's name. No name: the gateway's default worker
 * (and a single worker, which has no gateway, never sees one).
 */
export const WORKER_PARAM = 'worker';

/** Worker names as node.yaml and the gateway config spell them; the gateway checks the same. */
const WORKER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function isWorkerName(name: string): boolean {
  return WORKER_NAME.test(name);
}

/** The worker a URL's query names, or null (none, or not a worker name). */
export function workerFromSearch(search: string): string | null {
  const name = new URLSearchParams(search).get(WORKER_PARAM);
  return name !== null && isWorkerName(name) ? name : null;
}

/** The worker the page's URL names now, or null. */
export function currentWorker(): string | null {
  return typeof location === 'undefined' ? null : workerFromSearch(location.search);
}

/** A path with the worker added to its query (unchanged when there is none). */
export function withWorker(path: string, worker: string | null = currentWorker()): string {
  if (worker === null) return path;
  return `${path}${path.includes('?') ? '&' : '?'}${WORKER_PARAM}=${encodeURIComponent(worker)}`;
}

/** A page query with the worker set (or removed, for null), the rest kept. */
export function searchWithWorker(search: string, worker: string | null): string {
  const params = new URLSearchParams(search);
  if (worker === null) params.delete(WORKER_PARAM);
  else params.set(WORKER_PARAM, worker);
  const s = params.toString();
  return s ? `?${s}` : '';
}

/** The worker part of every query key: '' for the gateway's default (or a single worker). */
export function workerScope(worker: string | null = currentWorker()): string {
  return worker ?? '';
}
