import { ApiError, errorFromBody } from './errors.js';
import { tokenStore } from './token-store.js';
import type { Envelope } from './types.js';
import { currentWorker, withWorker } from './worker-choice.js';

export interface RequestOptions {
  readonly method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  readonly body?: unknown;
  /** Overrides the stored token (the setup exchange sends none). */
  readonly token?: string | null;
  readonly signal?: AbortSignal;
  /**
   * The worker behind a gateway that answers (worker-choice.ts): the one the page's URL names
   * unless given; null for the gateway's own routes (placements), which belong to no worker.
   */
  readonly worker?: string | null;
}

let idempotencySeq = 0;

/** Calls the control API and returns its `{data, seq}` envelope; a non-2xx answer throws ApiError. */
export async function apiRequest<T>(path: string, opts: RequestOptions = {}): Promise<Envelope<T>> {
  const method = opts.method ?? 'GET';
  const headers: Record<string, string> = { accept: 'application/json' };
  const token = opts.token === undefined ? tokenStore.get() : opts.token;
  if (token) headers.authorization = `Bearer ${token}`;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  // A retried mutation must not act twice: one key per logical call.
  if (method !== 'GET') headers['idempotency-key'] = `${Date.now().toString(36)}-${(idempotencySeq++).toString(36)}`;
  let res: Response;
  try {
    res = await fetch(withWorker(path, opts.worker === undefined ? currentWorker() : opts.worker), {
      method,
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      signal: opts.signal,
    });
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new ApiError(0, 'NETWORK', `the engine cannot be reached (${(err as Error).message})`);
  }
  const text = await res.text();
  let body: unknown = null;
  if (text) {
    try {
      body = JSON.parse(text);
    } catch {
      body = { error: text.slice(0, 200) };
    }
  }
  if (!res.ok) throw errorFromBody(res.status, body);
  const env = body as Partial<Envelope<T>> | null;
  if (env && typeof env === 'object' && 'data' in env) return { data: env.data as T, seq: env.seq ?? 0 };
  return { data: body as T, seq: 0 };
}

export async function apiGet<T>(path: string, signal?: AbortSignal): Promise<T> {
  return (await apiRequest<T>(path, { signal })).data;
}
