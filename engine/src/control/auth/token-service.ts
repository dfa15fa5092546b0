/**
 * Bearer tokens: minted with a random secret, shown once, stored as a sha256 hash; scoped, with
 * optional expiry and revocation. The one-time setup token of a fresh install is exchanged once
 * for the first admin token.
 */
import { createHash, randomBytes } from 'node:crypto';
import { rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { ServeError } from '@hloserve/common/errors';
import type { Store, TokenRow } from '../../state/store.js';
import { isScope, type Principal, type Scope } from './scopes.js';

const SETUP_KEY = 'auth.setup_token';
/** A setup token left unused this long stops working; the next start issues another. */
export const SETUP_TOKEN_TTL_MS = 24 * 3600 * 1000;

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');
const secret = (): string => randomBytes(32).toString('base64url');

export interface MintedToken {
  readonly token: string;
  readonly row: TokenRow;
}

export const unauthenticated = (why: string): ServeError => new ServeError('HLO_ERR_UNAUTHENTICATED', why);

export class TokenService {
  readonly #store: Store;
  readonly #now: () => number;
  /** tokenId -> last time lastUsedAt was written, so a busy client does not write on every call. */
  readonly #touched = new Map<string, number>();

  constructor(store: Store, now: () => number = Date.now) {
    this.#store = store;
    this.#now = now;
  }

  async mint(o: { name: string; scope: Scope; ttlSeconds?: number; createdBy: string }): Promise<MintedToken> {
    const id = randomBytes(6).toString('hex');
    const token = `hlo_${id}_${secret()}`;
    const now = this.#now();
    const row: TokenRow = {
      id,
      name: o.name,
      scope: o.scope,
      hash: sha256(token),
      createdAt: now,
      createdBy: o.createdBy,
      expiresAt: o.ttlSeconds !== undefined ? now + o.ttlSeconds * 1000 : null,
      revokedAt: null,
      lastUsedAt: null,
    };
    await this.#store.insertToken(row);
    return { token, row };
  }

  /** The principal a bearer token stands for; UNAUTHENTICATED names why not. */
  async verify(token: string): Promise<Principal> {
    if (!/^hlo_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/.test(token)) throw unauthenticated('malformed token');
    const row = await this.#store.tokenByHash(sha256(token));
    if (!row) throw unauthenticated('unknown token');
    const now = this.#now();
    if (row.revokedAt !== null) throw unauthenticated(`token ${row.id} was revoked`);
    if (row.expiresAt !== null && row.expiresAt <= now) throw unauthenticated(`token ${row.id} has expired`);
    if (!isScope(row.scope)) throw unauthenticated(`token ${row.id} has an unknown scope`);
    if (now - (this.#touched.get(row.id) ?? 0) > 60_000) {
      this.#touched.set(row.id, now);
      await this.#store.touchToken(row.id, now);
    }
    return { actor: `token:${row.id}`, tokenId: row.id, name: row.name, scope: row.scope };
  }

  async revoke(id: string): Promise<TokenRow> {
    const row = await this.#store.token(id);
    if (!row) throw new ServeError('HLO_ERR_NOT_FOUND', `no token '${id}'`);
    if (!(await this.#store.revokeToken(id, this.#now())))
      throw new ServeError('HLO_ERR_FAILED_PRECONDITION', `token '${id}' is already revoked`);
    return (await this.#store.token(id))!;
  }

  /**
   * At start: while no admin token is live, issue a fresh setup token, write it 0600 to `file`
   * and return it (the caller prints it). Returns null once an admin exists.
   */
  async issueSetupToken(file: string): Promise<string | null> {
    const now = this.#now();
    const admins = (await this.#store.listTokens()).filter(
      (t) => t.scope === 'admin' && t.revokedAt === null && (t.expiresAt === null || t.expiresAt > now),
    );
    if (admins.length > 0) {
      rmSync(file, { force: true });
      return null;
    }
    const token = `hlo_setup_${secret()}`;
    await this.#store.setSetting({
      key: SETUP_KEY,
      value: JSON.stringify({ hash: sha256(token), expiresAt: now + SETUP_TOKEN_TTL_MS }),
      updatedAt: now,
      updatedBy: 'system',
    });
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    writeFileSync(file, `${token}\n`, { mode: 0o600 });
    return token;
  }

  /** Exchanges the setup token, once, for an admin token. */
  async exchangeSetupToken(setupToken: string, file: string, name: string): Promise<MintedToken> {
    const row = await this.#store.setting(SETUP_KEY);
    const stored = row ? (JSON.parse(row.value) as { hash: string; expiresAt: number }) : null;
    if (!stored || stored.hash !== sha256(setupToken)) throw unauthenticated('unknown or already used setup token');
    if (stored.expiresAt <= this.#now()) throw unauthenticated('the setup token has expired; restart to get a new one');
    // Compare-and-delete: of two concurrent exchanges exactly one wins.
    if (!(await this.#store.takeSetting(SETUP_KEY, row!.value))) throw unauthenticated('setup token already used');
    rmSync(file, { force: true });
    return this.mint({ name, scope: 'admin', createdBy: 'setup' });
  }
}
