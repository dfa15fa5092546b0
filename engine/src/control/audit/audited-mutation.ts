/**
 * Every mutation of the control API runs through here, so it is audited exactly once: one record
 * per attempt (ok or the error code), with the actor, the target and the state before and after.
 * A request carrying an `Idempotency-Key` that the same actor already used gets the first answer
 * back without running again; concurrent retries wait on the first.
 */
import { ServeError, toServeError } from '@hloserve/common/errors';
import type { Store } from '../../state/store.js';
import type { Principal } from '../auth/scopes.js';

export interface MutationContext {
  readonly principal: Principal;
  readonly requestId: string;
  readonly idempotencyKey: string | null;
}

export interface Mutation<T> {
  readonly action: string;
  readonly target: string;
  /** State before, as the audit should show it (null where there was none). */
  readonly before?: () => unknown;
  /** Does the work; returns the response body and the state after. */
  readonly run: () => Promise<{ body: T; after?: unknown; status?: number }>;
}

export interface MutationAnswer<T> {
  readonly status: number;
  readonly body: T;
  /** True when this answer is a replay of an earlier request with the same key. */
  readonly replayed: boolean;
}

const KEY_RE = /^[\x21-\x7e]{1,200}$/;

export class AuditedMutations {
  readonly #store: Store;
  readonly #inflight = new Map<string, Promise<MutationAnswer<unknown>>>();
  readonly #now: () => number;

  constructor(store: Store, now: () => number = Date.now) {
    this.#store = store;
    this.#now = now;
  }

  async run<T>(ctx: MutationContext, m: Mutation<T>): Promise<MutationAnswer<T>> {
    const key = ctx.idempotencyKey;
    if (key === null) return this.#once(ctx, m);
    if (!KEY_RE.test(key))
      throw new ServeError('HLO_ERR_INVALID_ARGUMENT', 'Idempotency-Key must be 1-200 printable ASCII characters');
    const slot = `${ctx.principal.actor}\n${key}`;
    const pending = this.#inflight.get(slot);
    if (pending) return { ...(await pending), replayed: true } as MutationAnswer<T>;
    const done = (async (): Promise<MutationAnswer<unknown>> => {
      const prior = await this.#store.auditByKey(ctx.principal.actor, key);
      if (prior) {
        if (prior.action !== m.action || prior.target !== m.target)
          throw new ServeError(
            'HLO_ERR_FAILED_PRECONDITION',
            `Idempotency-Key '${key}' was already used for ${prior.action} ${prior.target}`,
          );
        const r = JSON.parse(prior.response ?? '{}') as { status: number; body: unknown };
        return { status: r.status, body: r.body, replayed: true };
      }
      return this.#once(ctx, m);
    })();
    this.#inflight.set(slot, done);
    try {
      const answer = await done;
      return answer as MutationAnswer<T>;
    } finally {
      this.#inflight.delete(slot);
    }
  }

  async #once<T>(ctx: MutationContext, m: Mutation<T>): Promise<MutationAnswer<T>> {
    const before = m.before ? m.before() : null;
    const base = {
      actor: ctx.principal.actor,
      action: m.action,
      target: m.target,
      requestId: ctx.requestId,
      idempotencyKey: ctx.idempotencyKey,
      before: before === null || before === undefined ? null : JSON.stringify(before),
    };
    let out: { body: T; after?: unknown; status?: number };
    try {
      out = await m.run();
    } catch (err) {
      const e = toServeError(err);
      await this.#store.appendAudit({
        ...base,
        at: this.#now(),
        after: null,
        result: e.code,
        response: JSON.stringify({ status: e.httpStatus, body: { error: e.message, code: e.code } }),
      });
      throw e;
    }
    const status = out.status ?? 200;
    await this.#store.appendAudit({
      ...base,
      at: this.#now(),
      after: out.after === undefined ? null : JSON.stringify(out.after),
      result: 'ok',
      response: JSON.stringify({ status, body: redactSecrets(out.body) }),
    });
    return { status, body: out.body, replayed: false };
  }
}

/** A minted token is shown once: a replay must not show it again, so it is never stored. */
function redactSecrets(body: unknown): unknown {
  if (body && typeof body === 'object' && 'data' in body) {
    const data = (body as { data: unknown }).data;
    if (data && typeof data === 'object' && 'token' in data)
      return { ...body, data: { ...data, token: '(shown once; not replayed)' } };
  }
  return body;
}
