import { useMemo } from 'react';
import { whereResident } from '../../api/reducers.js';
import type { ModelView } from '../../api/types.js';
import { useEvents, useModelMetrics } from '../../app/data.js';
import { formatBytes, formatTime } from '../../components/format.js';
import { QueryState } from '../../components/QueryState.js';
import { Stat } from '../../components/Stat.js';
import { placeOn, residencyMarks, residencySpans, untilNow } from './residency.js';

const WINDOW_MS = 15 * 60 * 1000;

/** Residency now, a lane of the last 15 minutes (on the device or not, events marked), and the events. */
export function ResidencyTab({ model }: { model: ModelView }) {
  const events = useEvents();
  const history = useModelMetrics(model.name);
  const r = model.residency;
  const marks = useMemo(() => residencyMarks(events.data ?? [], model.name), [events.data, model.name]);
  const spans = useMemo(() => residencySpans(history.data ?? []), [history.data]);
  const to = history.dataUpdatedAt || Date.now();
  const from = to - WINDOW_MS;
  const lane = useMemo(() => untilNow(spans, marks, r?.deviceResident ?? false, to), [spans, marks, r, to]);
  const inWindow = marks.filter((m) => m.at >= from);
  return (
    <>
      <section className="panel">
        <h2>Now</h2>
        {r ? (
          <div className="stats">
            <Stat k="weights on" v={whereResident(r)} />
            <Stat k="bytes" v={formatBytes(r.weightBytes)} />
            <Stat k="floor" v={r.floor} />
            <Stat k="leases" v={String(r.leases)} />
            <Stat k="loads" v={String(r.loads)} />
            <Stat k="evictions" v={String(r.evictions)} />
          </div>
        ) : (
          <p className="muted">Not in the weight cache.</p>
        )}
      </section>
      <section className="panel" data-testid="residency-timeline">
        <h2>Timeline (15 min)</h2>
        <div
          className="lane"
          role="img"
          aria-label={`on the device during ${lane.filter((s) => s.onDevice).length} stretches; ${inWindow.length} events`}
        >
          {lane
            .filter((s) => s.onDevice && s.to >= from)
            .map((s) => {
              const left = placeOn(s.from, from, to);
              return (
                <span
                  key={s.from}
                  className="span"
                  style={{ left: `${left}%`, width: `${Math.max(0.3, placeOn(s.to, from, to) - left)}%` }}
                  title={`on the device ${formatTime(s.from)} – ${formatTime(s.to)} (${formatBytes(s.bytes)})`}
                />
              );
            })}
          {inWindow.map((m) => (
            <i
              key={m.seq}
              className={`mark ${m.kind}`}
              style={{ left: `${placeOn(m.at, from, to)}%` }}
              title={`${formatTime(m.at)} ${m.text}`}
            />
          ))}
        </div>
        <div className="lane-axis muted">
          <span>15 min ago</span>
          <span className="legend">
            <span>
              <i style={{ background: 'var(--resident)' }} /> on the device
            </span>{' '}
            <span>
              <i style={{ background: 'var(--ok)' }} /> loaded
            </span>{' '}
            <span>
              <i style={{ background: 'var(--bad)' }} /> evicted
            </span>{' '}
            <span>
              <i style={{ background: 'var(--pinned)' }} /> pin / policy
            </span>
          </span>
          <span>now</span>
        </div>
      </section>
      <section className="panel">
        <h2>Loads and evictions, with the reason</h2>
        <QueryState isLoading={events.isLoading} error={events.error}>
          {marks.length === 0 ? (
            <p className="muted">No loads or evictions recorded for this model.</p>
          ) : (
            <div className="scroll-x">
              <table className="plain" data-testid="residency-events">
                <thead>
                  <tr>
                    <th>when</th>
                    <th>what (reason)</th>
                  </tr>
                </thead>
                <tbody>
                  {[...marks].reverse().map((m) => (
                    <tr key={m.seq}>
                      <td>{formatTime(m.at)}</td>
                      <td className={m.kind === 'evict' || m.kind === 'fail' ? 'error' : undefined}>{m.text}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </QueryState>
      </section>
    </>
  );
}
