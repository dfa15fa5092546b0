import { useMemo } from 'react';
import { useMetrics, useModels, useWorkers } from '../app/data.js';
import { formatMs, formatRate } from '../components/format.js';
import { MemoryBar } from '../components/MemoryBar.js';
import { QueryState } from '../components/QueryState.js';
import { Sparkline } from '../components/Sparkline.js';

export function Overview() {
  const workers = useWorkers();
  const metrics = useMetrics();
  const models = useModels();
  const ticks = metrics.data ?? [];
  const last = ticks[ticks.length - 1];
  const series = useMemo(() => {
    const x = ticks.map((t) => t.timeMs / 1000);
    return {
      x,
      rate: [
        { name: 'req/s', values: ticks.map((t) => t.requestsPerSecond), color: '#2f7dd1' },
        { name: 'errors/s', values: ticks.map((t) => t.errorsPerSecond), color: '#d14a3a' },
      ],
      latency: [
        { name: 'p50 ms', values: ticks.map((t) => t.p50Ms), color: '#3aa36b' },
        { name: 'p99 ms', values: ticks.map((t) => t.p99Ms), color: '#c07a12' },
      ],
      churn: [
        { name: 'loads/min', values: ticks.map((t) => t.loadsPerMinute), color: '#6b3fa0' },
        { name: 'evictions/min', values: ticks.map((t) => t.evictionsPerMinute), color: '#8a96a3' },
      ],
    };
  }, [ticks]);
  const counts = useMemo(() => {
    const list = models.data ?? [];
    return {
      total: list.length,
      ready: list.filter((m) => m.state === 'ready').length,
      resident: list.filter((m) => m.resident === 'device').length,
      pinned: list.filter((m) => m.pin !== 'unpinned').length,
      failed: list.filter((m) => m.state === 'failed').length,
    };
  }, [models.data]);
  return (
    <>
      <h1>Overview</h1>
      <section className="panel" aria-labelledby="now">
        <h2 id="now">Now</h2>
        <div className="stats" data-testid="live-stats">
          <Stat k="requests/s" v={formatRate(last?.requestsPerSecond)} />
          <Stat k="p50" v={formatMs(last?.p50Ms)} />
          <Stat k="p99" v={formatMs(last?.p99Ms)} />
          <Stat k="errors/s" v={formatRate(last?.errorsPerSecond)} />
          <Stat k="cold loads/min" v={formatRate(last?.loadsPerMinute)} />
          <Stat k="evictions/min" v={formatRate(last?.evictionsPerMinute)} />
          <Stat k="models" v={`${counts.ready}/${counts.total} ready`} />
          <Stat k="on device" v={`${counts.resident} (${counts.pinned} pinned)`} />
        </div>
      </section>
      <section className="panel" aria-labelledby="devices">
        <h2 id="devices">Device memory</h2>
        <QueryState isLoading={workers.isLoading} error={workers.error}>
          {(workers.data ?? []).map((w) => (
            <div key={w.name} style={{ marginBottom: 14 }}>
              <div className="row" style={{ justifyContent: 'space-between' }}>
                <strong>{w.name}</strong>
                <span className="muted">
                  {w.device} · {w.plugin}
                </span>
              </div>
              <MemoryBar worker={w} />
            </div>
          ))}
        </QueryState>
      </section>
      <div className="grid">
        <section className="panel">
          <h2>Throughput and errors</h2>
          <Sparkline label="requests and errors per second, last five minutes" x={series.x} series={series.rate} />
        </section>
        <section className="panel">
          <h2>Latency</h2>
          <Sparkline label="p50 and p99 latency, last five minutes" x={series.x} series={series.latency} />
        </section>
        <section className="panel">
          <h2>Loads and evictions</h2>
          <Sparkline label="cold loads and evictions per minute" x={series.x} series={series.churn} />
        </section>
      </div>
      {metrics.error ? <p className="error">{String(metrics.error)}</p> : null}
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
