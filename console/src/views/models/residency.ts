/**
 * A model's residency over time for the timeline lane: spans from the per-second metric history
 * (resident bytes on the device, or none) and marks from the engine's events (loads, evictions
 * with their reason, pins), both placed on the same window.
 */
import type { EventRecord, MetricSample } from '../../api/types.js';

export interface Span {
  readonly from: number;
  readonly to: number;
  readonly onDevice: boolean;
  readonly bytes: number;
}

export interface Mark {
  readonly at: number;
  readonly seq: number;
  readonly kind: 'load' | 'evict' | 'unload' | 'fail' | 'pin' | 'other';
  /** What happened, with the reason where the engine gave one: "evicted (budget)". */
  readonly text: string;
}

/** Consecutive samples with the same on-device state merged; a gap over `gapMs` ends a span. */
export function residencySpans(samples: readonly MetricSample[], gapMs = 5_000): Span[] {
  const spans: Span[] = [];
  let cur: { from: number; to: number; onDevice: boolean; bytes: number } | null = null;
  for (const s of samples) {
    const on = s.residentBytes > 0;
    if (cur && cur.onDevice === on && s.at - cur.to <= gapMs) {
      cur.to = s.at;
      cur.bytes = Math.max(cur.bytes, s.residentBytes);
      continue;
    }
    if (cur) spans.push({ ...cur, to: s.at - cur.to <= gapMs ? s.at : cur.to });
    cur = { from: s.at, to: s.at, onDevice: on, bytes: s.residentBytes };
  }
  if (cur) spans.push(cur);
  return spans;
}

const reasonOf = (data: Readonly<Record<string, unknown>>): string | null => {
  const r = data.reason ?? data.error ?? data.residency;
  return typeof r === 'string' && r !== '' ? r : null;
};

/** The events about one model's residency and lifecycle, oldest first, as timeline marks. */
export function residencyMarks(events: readonly EventRecord[], model: string): Mark[] {
  const marks: Mark[] = [];
  for (const e of events) {
    if (e.model !== model) continue;
    if (e.kind === 'upload.installed') {
      marks.push({ at: e.at, seq: e.seq, kind: 'other', text: 'installed by an upload' });
      continue;
    }
    if (!e.kind.startsWith('model.')) continue;
    const verb = e.kind.slice('model.'.length);
    let kind: Mark['kind'];
    if (verb === 'evicted') kind = 'evict';
    else if (verb === 'loaded' || verb === 'reloaded') kind = 'load';
    else if (verb === 'unloaded') kind = 'unload';
    else if (verb === 'failed') kind = 'fail';
    else if (verb === 'residency-changed' || verb === 'policy' || verb === 'pin' || verb === 'unpin') kind = 'pin';
    else continue;
    const reason = kind === 'load' ? null : reasonOf(e.data);
    marks.push({ at: e.at, seq: e.seq, kind, text: reason ? `${verb} (${reason})` : verb });
  }
  return marks.sort((a, b) => a.at - b.at || a.seq - b.seq);
}

/** Where an instant falls on a window, as a percentage clamped to [0, 100]. */
export function placeOn(at: number, from: number, to: number): number {
  if (to <= from) return 100;
  return Math.min(100, Math.max(0, ((at - from) / (to - from)) * 100));
}

/**
 * The spans carried on to `now` with what the engine says at this moment: the history is written
 * a few seconds late, and a model loaded since its last sample is on the device already.
 */
export function untilNow(spans: readonly Span[], marks: readonly Mark[], onDeviceNow: boolean, now: number): Span[] {
  const out = [...spans];
  const last = out[out.length - 1];
  if (!onDeviceNow) return out;
  if (last?.onDevice) {
    out[out.length - 1] = { ...last, to: Math.max(last.to, now) };
    return out;
  }
  const loads = marks.filter((m) => m.kind === 'load');
  const since = Math.max(last?.to ?? -Infinity, loads[loads.length - 1]?.at ?? -Infinity);
  if (Number.isFinite(since) && since < now) out.push({ from: since, to: now, onDevice: true, bytes: 0 });
  return out;
}
