export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v >= 100 || i === 0 ? v.toFixed(0) : v.toFixed(1)} ${units[i]}`;
}

export function formatMs(n: number | null | undefined): string {
  if (n === null || n === undefined) return '–';
  return n >= 100 ? `${n.toFixed(0)} ms` : `${n.toFixed(1)} ms`;
}

export function formatRate(n: number | null | undefined): string {
  if (n === null || n === undefined) return '–';
  return n >= 100 ? n.toFixed(0) : n.toFixed(1);
}

export function formatAgo(ms: number | null | undefined, now = Date.now()): string {
  if (!ms) return 'never';
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.round(s / 60)}m ago`;
  if (s < 86400) return `${Math.round(s / 3600)}h ago`;
  return `${Math.round(s / 86400)}d ago`;
}

/** Where formatAgo goes from one unit to the next (ms elapsed): its rounded seconds reach 60, 3600, 86400. */
const AGO_UNITS = [
  { below: 59_500, unit: 1000 },
  { below: 3_599_500, unit: 60_000 },
  { below: 86_399_500, unit: 3_600_000 },
  { below: Infinity, unit: 86_400_000 },
] as const;

/**
 * How long until formatAgo(ms) reads differently, ms (and a little more, so that it has): at the
 * next half unit of its rounding (a second under a minute, a minute under an hour, ...; half a
 * second sooner past a minute, where the seconds are rounded first), or where the unit changes.
 */
export function agoChangesInMs(ms: number, now = Date.now()): number {
  const elapsed = Math.max(0, now - ms);
  const { below, unit } = AGO_UNITS.find((u) => elapsed < u.below)!;
  const early = unit === 1000 ? 0 : 500;
  return Math.min(unit - ((elapsed + unit / 2 + early) % unit), below - elapsed) + 20;
}

export function formatTime(ms: number): string {
  return new Date(ms).toLocaleString(undefined, { hour12: false });
}
