/**
 * Where the console keeps its bearer token. localStorage, so every tab of one browser shares the
 * login (an appliance user opens many); the token never goes in a URL.
 *
 * The token is read from storage once and then held: screens read it on every render, and a
 * storage read each time is a call into the browser. Another tab's sign-in or sign-out reaches this
 * one as a `storage` event, and this tab follows at once: its screens, its API calls and its share
 * of the live feed move to the new token (or to sign-in), rather than showing a signed-out
 * browser's data until the next reload.
 */
export const TOKEN_KEY = 'hloserve.token';
type Listener = (token: string | null) => void;

export interface TokenStore {
  get(): string | null;
  /** Sets or forgets the token; `reason` says why it was forgotten when the engine refused it. */
  set(token: string | null, reason?: string | null): void;
  /** Why the last sign-out happened, when the engine refused the token. */
  reason(): string | null;
  subscribe(listener: Listener): () => void;
}

/** What a per-browser store reads and watches: the storage, and another tab's changes to it. */
export interface WatchedStorage {
  readonly storage: () => Pick<Storage, 'getItem' | 'setItem' | 'removeItem'> | null;
  /** Calls `changed` with the key another tab wrote (null: it cleared the storage). */
  readonly watch?: (changed: (key: string | null) => void) => void;
}

export function createTokenStore({ storage, watch }: WatchedStorage): TokenStore {
  const listeners = new Set<Listener>();
  let signedOutBecause: string | null = null;
  /** undefined until first read. */
  let held: string | null | undefined;
  const read = (): string | null => storage()?.getItem(TOKEN_KEY) ?? null;
  const tell = (token: string | null) => {
    for (const l of [...listeners]) l(token);
  };
  watch?.((key) => {
    if (key !== null && key !== TOKEN_KEY) return;
    const was = held;
    held = read();
    // A tab that had not read the token yet has no one to tell.
    if (was === undefined || was === held) return;
    signedOutBecause = null;
    tell(held);
  });
  return {
    get() {
      if (held === undefined) held = read();
      return held;
    },
    set(token, reason = null) {
      signedOutBecause = token === null ? reason : null;
      const s = storage();
      if (token === null) s?.removeItem(TOKEN_KEY);
      else s?.setItem(TOKEN_KEY, token);
      held = token;
      tell(token);
    },
    reason: () => signedOutBecause,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

/** The browser's localStorage, or null where it is refused (a private window's policy, a test). */
function browserStorage(): Storage | null {
  try {
    return typeof localStorage === 'undefined' ? null : localStorage;
  } catch {
    return null;
  }
}

/** This browser's localStorage and its `storage` events (other tabs' writes). */
export const localWatchedStorage: WatchedStorage = {
  storage: browserStorage,
  watch:
    typeof addEventListener === 'function'
      ? (changed) => addEventListener('storage', (e) => e.storageArea === browserStorage() && changed(e.key))
      : undefined,
};

export const tokenStore: TokenStore = createTokenStore(localWatchedStorage);
