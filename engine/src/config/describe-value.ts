/**
 * How a YAML/JSON value is shown in a validation message: strings quoted (so `"abc"` and `abc`
 * cannot be confused with a number or a key), containers by kind rather than dumped whole.
 * Shared by the config and bundle validators so their messages read alike.
 */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return String(value);
}

/** True for a plain YAML mapping (not a list, not null). */
export function isMapping(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
