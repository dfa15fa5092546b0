/**
 * Reads a setup token delivered in the URL fragment (`#setup=<token>`) and strips the fragment at
 * once, so it stays out of history, bookmarks and screenshots. Fragments never reach server logs.
 */
export function takeSetupTokenFromUrl(
  loc: Pick<Location, 'hash' | 'pathname' | 'search'>,
  replace: (url: string) => void,
): string | null {
  const m = /^#setup=([^&]+)/.exec(loc.hash);
  if (!m) return null;
  replace(loc.pathname + loc.search);
  return decodeURIComponent(m[1]!);
}
