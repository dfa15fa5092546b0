import { useMemo } from 'react';
import type { ModelView } from '../../api/types.js';
import { useModelHistograms, useModelStats, useModelMetrics } from '../../app/data.js';
import { Bars } from '../../components/Bars.js';
import { formatMs } from '../../components/format.js';
import { batchBars, formatSeconds, latencyBars, quantileBound } from '../../components/histogram.js';
import { Sparkline } from '../../components/Sparkline.js';
import { Stat } from '../../components/Stat.js';

export function PerformanceTab({ model }: { model: ModelView }) {
  const history = useModelMetrics(model.name);
  const hist = useModelHistograms(model.name);
  const fresh = useModelStats(model.name);
  const s = fresh.data ?? model.stats;
  const samples = useMemo(() => history.data ?? [], [history.data]);
  const x = useMemo(() => samples.map((p) => p.at / 1000), [samples]);
  const rate = useMemo(
    () => [{ name: 'req/s', values: samples.map((p) => p.requestsPerSecond), color: '#2f7dd1' }],
    [samples],
  );
  const queue = useMemo(
    () => [{ name: 'queue depth', values: samples.map((p) => p.queueDepth), color: '#c07a12' }],
    [samples],
  );
  const latency = hist.data?.latencySeconds ?? null;
  const bound = (q: number) => {
    const b = quantileBound(latency, q);
    return b === null ? '–' : b === Infinity ? 'over the largest bucket' : `≤ ${formatSeconds(b)}`;
  };
  const avg = (total: number, n: number) => (n > 0 ? formatMs((total / n) * 1000) : '–');
  return (
    <>
      <section className="panel">
        <h2>Totals since start</h2>
        {s ? (
          <div className="stats">
            <Stat k="requests served" v={String(s.requestsServed)} />
            <Stat k="device calls" v={String(s.dispatchCount)} />
            <Stat k="rows per call" v={s.dispatchCount ? (s.rowsServed / s.dispatchCount).toFixed(2) : '–'} />
            <Stat
              k="padding"
              v={
                s.rowsServed + s.paddedRows
                  ? `${((100 * s.paddedRows) / (s.rowsServed + s.paddedRows)).toFixed(1)}%`
                  : '–'
              }
            />
            <Stat k="device time per call" v={avg(s.computeSecondsTotal, s.dispatchCount)} />
            <Stat k="queue wait per request" v={avg(s.queueWaitSecondsTotal, s.requestsServed)} />
            <Stat k="failed calls" v={String(s.failedDispatches)} />
          </div>
        ) : (
          <p className="muted">No statistics: the model is not loaded.</p>
        )}
      </section>
      <div className="grid">
        <section className="panel" data-testid="latency-histogram">
          <h2>Request latency</h2>
          {latency && latency.count > 0 ? (
            <>
              <p className="muted">
                {latency.count} request{latency.count === 1 ? '' : 's'} · p50 {bound(0.5)} · p99 {bound(0.99)} · mean{' '}
                {formatSeconds(latency.sum / latency.count)} (in the worker, from arrival to answer)
              </p>
              <Bars bars={latencyBars(latency)} caption={`request latency of ${model.name}`} />
            </>
          ) : (
            <p className="muted">No requests yet.</p>
          )}
        </section>
        <section className="panel" data-testid="batch-histogram">
          <h2>Device calls per batch size</h2>
          {hist.data && Object.keys(hist.data.batchSizes).length > 0 ? (
            <>
              <p className="muted">
                {hist.data.rowsServed} rows served, {hist.data.paddedRows} padding rows added to reach a compiled size
              </p>
              <Bars
                bars={batchBars(hist.data.batchSizes, model.batchSizes)}
                caption={`device calls per compiled batch size of ${model.name}`}
              />
            </>
          ) : (
            <p className="muted">No device calls yet.</p>
          )}
        </section>
      </div>
      <div className="grid">
        <section className="panel">
          <h2>Requests per second (15 min)</h2>
          <Sparkline label={`requests per second of ${model.name}`} x={x} series={rate} windowS={900} />
        </section>
        <section className="panel">
          <h2>Queue depth (15 min)</h2>
          <Sparkline label={`queue depth of ${model.name}`} x={x} series={queue} windowS={900} />
        </section>
      </div>
      {history.error ? <p className="error">{String(history.error)}</p> : null}
      {hist.error ? <p className="error">{String(hist.error)}</p> : null}
    </>
  );
}
