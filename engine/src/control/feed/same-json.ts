/**
 * Equality of two JSON-shaped values (what the feed's topics hold: plain objects, arrays, strings,
 * numbers, booleans, null). The sampler compares every model's entries four times a second while
 * a client is connected; node:util's isDeepStrictEqual, which also weighs prototypes, symbols and
 * property descriptors, was half of a sample's time over a thousand models.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) {
    // NaN is never sent (JSON.stringify writes null), but two NaNs are the same value.
    return typeof a === 'number' && typeof b === 'number' && Number.isNaN(a) && Number.isNaN(b);
  }
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let n = 0;
  for (const k in x) {
    if (!Object.hasOwn(x, k)) continue;
    // A key absent from one side and undefined on the other serializes alike, and compares alike.
    if (!sameJson(x[k], y[k])) return false;
    if (x[k] !== undefined) n++;
  }
  let m = 0;
  for (const k in y) if (Object.hasOwn(y, k) && y[k] !== undefined) m++;
  return n === m;
}
