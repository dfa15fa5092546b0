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

export function formatTime(ms: number): string {
  return new Date(ms).toLocaleString(undefined, { hour12: false });
}
