/**
 * Where the console keeps its bearer token. localStorage, so every tab of one browser shares the
 * login (an appliance user opens many); the token never goes in a URL.
 */
const KEY = 'hloserve.token';
type Listener = (token: string | null) => void;
const listeners = new Set<Listener>();
let signedOutBecause: string | null = null;

function storage(): Storage | null {
  try {
    return typeof localStorage === 'undefined' ? null : localStorage;
  } catch {
    return null;
  }
}

export const tokenStore = {
  get(): string | null {
    return storage()?.getItem(KEY) ?? null;
  },
  /** Sets or forgets the token; `reason` says why it was forgotten when the engine refused it. */
  set(token: string | null, reason: string | null = null): void {
    signedOutBecause = token === null ? reason : null;
    const s = storage();
    if (token === null) s?.removeItem(KEY);
    else s?.setItem(KEY, token);
    for (const l of listeners) l(token);
  },
  /** Why the last sign-out happened, when the engine refused the token. */
  reason(): string | null {
    return signedOutBecause;
  },
  subscribe(listener: Listener): () => void {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
};
