import { useMemo, useRef } from 'react';
import type { MetricsState, ModelView, TickTotals } from '../api/types.js';
import { useMetrics, useModels, useWorkers } from '../app/data.js';
import { formatMs, formatRate } from '../components/format.js';
import { perMinute, pushPoint, type CounterPoint } from '../components/counter-rate.js';
import { deviceBlocks, type DeviceBlock } from '../components/device-blocks.js';
import { MemoryBar } from '../components/MemoryBar.js';
import { QueryState } from '../components/QueryState.js';
import { Sparkline } from '../components/Sparkline.js';

interface Point {
  readonly t: number;
  readonly rps: number;
  readonly p50: number | null;
  readonly p99: number | null;
  readonly loadsPerMin: number | null;
  readonly evictionsPerMin: number | null;
}

/**
 * The chart points from the totals of each tick. Loads and evictions are counters: their
 * per-minute rate is the increase over the last minute held (a one-tick difference would be all
 * spikes).
 */
export function summarise(totals: readonly TickTotals[], windowMs = 60_000): Point[] {
  let from = 0;
  return totals.map((cur) => {
    while (totals[from]!.at < cur.at - windowMs) from++;
    const base = totals[from]!;
    const minutes = (cur.at - base.at) / 60_000;
    // Under 15 s of history a rate per minute would be mostly noise.
    const rate = (a: number, b: number) => (minutes >= 0.25 ? Math.max(0, a - b) / minutes : null);
    return {
      t: cur.at,
      rps: cur.requestsPerSecond,
      p50: cur.p50Ms,
      p99: cur.p99Ms,
      loadsPerMin: rate(cur.loads, base.loads),
      evictionsPerMin: rate(cur.evictions, base.evictions),
    };
  });
}

interface ModelSummary {
  readonly failed: number;
  readonly missed: number;
  readonly ready: number;
  readonly count: number;
  readonly pinned: number;
  readonly blocks: readonly DeviceBlock[];
}

const emptySummary: ModelSummary = { failed: 0, missed: 0, ready: 0, count: 0, pinned: 0, blocks: [] };

/**
 * What the overview shows of the model list. The cache shares equal parts of a selection with
 * the previous one, so a feed write that changes none of this (a queue depth, a last-use time)
 * does not render the overview; the blocks keep their LRU order but not the times themselves.
 */
function summariseModels(list: readonly ModelView[]): ModelSummary {
  return {
    failed: list.reduce((s, m) => s + (m.stats?.failedDispatches ?? 0), 0),
    missed: list.reduce((s, m) => s + (m.queue?.deadlineMisses ?? 0), 0),
    ready: list.filter((m) => m.state === 'READY').length,
    count: list.length,
    pinned: list.filter((m) => m.residency?.floor === 'device').length,
    blocks: deviceBlocks(list).map((b) => ({ ...b, lastUsedAt: null })),
  };
}

const metricTotals = (s: MetricsState) => s.totals;

export function Overview() {
  const workers = useWorkers();
  const totals = useMetrics(metricTotals).data;
  const models = useModels(summariseModels);
  const points = useMemo(() => summarise(totals ?? []), [totals]);
  const last = points[points.length - 1];
  const series = useMemo(() => {
    const x = points.map((p) => p.t / 1000);
    return {
      x,
      rate: [{ name: 'req/s', values: points.map((p) => p.rps), color: '#2f7dd1' }],
      latency: [
        { name: 'p50 ms', values: points.map((p) => p.p50), color: '#3aa36b' },
        { name: 'p99 ms', values: points.map((p) => p.p99), color: '#c07a12' },
      ],
      churn: [
        { name: 'loads/min', values: points.map((p) => p.loadsPerMin), color: '#6b3fa0' },
        { name: 'evictions/min', values: points.map((p) => p.evictionsPerMin), color: '#8a96a3' },
      ],
    };
  }, [points]);
  const { failed, missed, ready, count, pinned, blocks } = models.data ?? emptySummary;
  // Errors are counters on the model list; each 1 Hz tick samples them, so their rate moves with time.
  const errorHistory = useRef<CounterPoint[]>([]);
  const errorsPerMin = useMemo(() => {
    if (last) errorHistory.current = pushPoint(errorHistory.current, { t: last.t, v: failed + missed });
    return perMinute(errorHistory.current);
  }, [last, failed, missed]);
  const onDevice = blocks.length;
  return (
    <>
      <h1>Overview</h1>
      <section className="panel" aria-labelledby="now">
        <h2 id="now">Now</h2>
        <div className="stats" data-testid="live-stats">
          <Stat k="requests/s" v={formatRate(last?.rps)} />
          <Stat k="p50" v={formatMs(last?.p50)} />
          <Stat k="p99" v={formatMs(last?.p99)} />
          <Stat k="errors/min" v={formatRate(errorsPerMin)} />
          <Stat k="failed device calls, deadline misses" v={`${failed}, ${missed}`} />
          <Stat k="cold loads/min" v={formatRate(last?.loadsPerMin)} />
          <Stat k="evictions/min" v={formatRate(last?.evictionsPerMin)} />
          <Stat k="models ready" v={`${ready} of ${count}`} />
          <Stat k={`on the device, ${pinned} pinned`} v={String(onDevice)} />
        </div>
      </section>
      <section className="panel" aria-labelledby="devices">
        <h2 id="devices">Device memory</h2>
        <QueryState isLoading={workers.isLoading} error={workers.error}>
          {(workers.data ?? []).map((w) => (
            <div key={w.name}>
              <p className="muted">
                worker <strong>{w.name}</strong> · {w.platform} · {w.modelControlMode} mode · {w.discipline} scheduling
                · {w.inflight} in flight {w.ready ? '' : '· not ready'}
              </p>
              {w.devices.map((d) => (
                <div key={d.ordinal} style={{ marginBottom: 12 }}>
                  <MemoryBar device={d} blocks={blocks} />
                </div>
              ))}
            </div>
          ))}
        </QueryState>
      </section>
      <div className="grid">
        <section className="panel">
          <h2>Throughput</h2>
          <Sparkline label="requests per second, last five minutes" x={series.x} series={series.rate} />
        </section>
        <section className="panel">
          <h2>Latency</h2>
          <Sparkline label="p50 and p99 latency, last five minutes" x={series.x} series={series.latency} />
          {last && last.p99 === null && <p className="muted">No request was answered in the last second.</p>}
        </section>
        <section className="panel">
          <h2>Loads and evictions</h2>
          <Sparkline label="cold loads and evictions per minute" x={series.x} series={series.churn} />
        </section>
      </div>
    </>
  );
}

function Stat({ k, v }: { k: string; v: string }) {
  return (
    <div className="stat">
      <div className="v">{v}</div>
      <div className="k">{k}</div>
    </div>
  );
}
