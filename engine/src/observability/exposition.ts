/**
 * The Prometheus text exposition, written as prom-client's registry writes it (no default labels,
 * no exemplars), but a few hundred lines per turn of the event loop. With a thousand models that
 * had served, /metrics is 2.7 MB, and formatted in one turn a scrape held the serving thread for
 * 100-250 ms (400-480 ms for one request beside it; bench/RESULTS.md, session 23).
 */
import { setImmediate as yieldToIo } from 'node:timers/promises';
import type { HistogramCapture } from './plain-histogram.js';

/** A family as prom-client's metrics return it from get(). */
export interface FamilyValues {
  readonly name: string;
  readonly help: string;
  readonly type: string;
  readonly values?: readonly {
    readonly metricName?: string;
    readonly labels?: Readonly<Record<string, string | number>>;
    readonly value: number;
  }[];
}

const LINES_PER_TURN = 1000;

export async function familyText(f: FamilyValues, lines: string[]): Promise<void> {
  lines.push(`# HELP ${escapeText(f.name)} ${escapeText(f.help)}`, `# TYPE ${escapeText(f.name)} ${f.type}`);
  let n = 0;
  for (const v of f.values ?? []) {
    if (++n % LINES_PER_TURN === 0) await yieldToIo();
    const labels = Object.entries(v.labels ?? {})
      .map(([k, x]) => `${k}="${typeof x === 'string' ? escapeLabelValue(x) : x}"`)
      .join(',');
    lines.push(`${v.metricName ?? f.name}${labels === '' ? '' : `{${labels}}`} ${numberText(v.value)}`);
  }
}

export async function histogramText(h: HistogramCapture, lines: string[]): Promise<void> {
  lines.push(`# HELP ${escapeText(h.name)} ${escapeText(h.help)}`, `# TYPE ${escapeText(h.name)} histogram`);
  const perTurn = Math.max(1, Math.floor(LINES_PER_TURN / (h.bounds.length + 3)));
  let n = 0;
  for (const s of h.series) {
    if (++n % perTurn === 0) await yieldToIo();
    const label = `${h.label}="${escapeLabelValue(s.labelValue)}"`;
    let cumulative = 0;
    for (let i = 0; i <= h.bounds.length; i++) {
      cumulative += s.counts[i]!;
      const le = i < h.bounds.length ? `${h.bounds[i]!}` : '+Inf';
      lines.push(`${h.name}_bucket{le="${escapeLabelValue(le)}",${label}} ${numberText(cumulative)}`);
    }
    lines.push(`${h.name}_sum{${label}} ${numberText(s.sum)}`, `${h.name}_count{${label}} ${numberText(s.count)}`);
  }
}

const escapeText = (s: string): string => s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
const escapeLabelValue = (s: string): string => escapeText(s).replace(/"/g, '\\"');

function numberText(v: number): string {
  if (Number.isNaN(v)) return 'Nan';
  if (!Number.isFinite(v)) return v < 0 ? '-Inf' : '+Inf';
  return `${v}`;
}
