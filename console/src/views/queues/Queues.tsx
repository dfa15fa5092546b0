import { useMemo, useState } from 'react';
import type { Discipline } from '../../api/types.js';
import { useModels, useQueueHistory, useQueues, useSetDiscipline } from '../../app/data.js';
import { Link } from '../../app/router.js';
import { useSession } from '../../app/session.js';
import { formatMs } from '../../components/format.js';
import { QueryState } from '../../components/QueryState.js';
import { Sparkline } from '../../components/Sparkline.js';
import { Stat } from '../../components/Stat.js';
import { busiestModels, overallShare, type ShareHistory } from './share.js';
import { queueRows, type QueueRow } from './rows.js';

const COLORS = ['#2f7dd1', '#c07a12', '#1e7b45', '#b42318', '#6b3fa0'];
const pct = (x: number | null | undefined) => (x === null || x === undefined ? '–' : `${(100 * x).toFixed(0)}%`);

export function Queues() {
  const queues = useQueues();
  const history = useQueueHistory();
  const models = useModels();
  const session = useSession();
  const [search, setSearch] = useState('');
  const q = queues.data;
  const h = history.data;
  const overall = useMemo(() => (h ? overallShare(h) : null), [h]);
  const rows = useMemo(
    () => queueRows(q?.models ?? [], models.data ?? [], overall, search),
    [q, models.data, overall, search],
  );
  const totals = useMemo(() => {
    let depth = 0;
    let misses = 0;
    let oldest = 0;
    for (const r of rows.all) {
      depth += r.depth;
      misses += r.deadlineMisses;
      oldest = Math.max(oldest, r.oldestWaitMs);
    }
    return { depth, misses, oldest };
  }, [rows.all]);
  return (
    <>
      <h1>Queues and scheduler</h1>
      <QueryState isLoading={queues.isLoading} error={queues.error}>
        {q && (
          <>
            <section className="panel" data-testid="scheduler">
              <div className="stats">
                <Stat k="discipline" v={q.discipline} testId="discipline" />
                <Stat k="executing now" v={String(q.executing)} />
                <Stat k="queued requests" v={String(totals.depth)} testId="queued-total" />
                <Stat k="oldest wait" v={totals.oldest ? formatMs(totals.oldest) : '–'} />
                <Stat k="deadline misses" v={String(totals.misses)} />
              </div>
              <p className="muted">
                {describeDiscipline(q.discipline)}{' '}
                {session.data?.scope === 'admin' && <DisciplinePicker current={q.discipline} />}
              </p>
            </section>
            <section className="panel">
              <h2>Device time share against weight (last 5 minutes, sampled every 2 s)</h2>
              {h && <ShareChart history={h} />}
            </section>
            <section className="panel">
              <div className="row" style={{ justifyContent: 'space-between' }}>
                <h2 style={{ margin: 0 }}>Per model</h2>
                <input
                  type="search"
                  placeholder="search models"
                  aria-label="search models"
                  value={search}
                  onChange={(e) => setSearch(e.target.value)}
                  data-testid="queue-search"
                />
              </div>
              <p className="muted">
                Busiest first. Device share: this model's part of the device time used over the last five minutes; the
                orange mark is its part of the weights. Contended: its part of the recent time used while other models
                waited, which the fair discipline balances against weight.
              </p>
              <div className="scroll-x">
                <QueueTable rows={rows.shown} />
              </div>
              {rows.all.length > rows.shown.length && (
                <p className="muted">
                  {rows.all.length - rows.shown.length} more models with nothing queued and no recent device time;
                  search to find one.
                </p>
              )}
            </section>
          </>
        )}
      </QueryState>
    </>
  );
}

function describeDiscipline(d: Discipline): string {
  if (d === 'fair')
    return 'fair: the next batch goes to the model furthest below its weighted share of recent device time.';
  if (d === 'fifo') return 'fifo: the next batch goes to the model whose front request arrived first.';
  return 'edf: the next batch goes to the earliest deadline; requests that cannot finish in time are shed.';
}

function DisciplinePicker({ current }: { current: Discipline }) {
  const set = useSetDiscipline();
  const [draft, setDraft] = useState<Discipline>(current);
  return (
    <span className="row" style={{ display: 'inline-flex' }}>
      <label className="visually-hidden" htmlFor="discipline-select">
        discipline
      </label>
      <select
        id="discipline-select"
        value={draft}
        onChange={(e) => setDraft(e.target.value as Discipline)}
        data-testid="discipline-select"
      >
        <option value="fair">fair</option>
        <option value="fifo">fifo</option>
        <option value="edf">edf</option>
      </select>
      <button
        type="button"
        className="primary"
        disabled={draft === current || set.isPending}
        onClick={() => set.mutate(draft)}
        data-testid="action-discipline"
      >
        {draft === current ? 'Change discipline' : `Change to ${draft} (audited)`}
      </button>
      {set.error && <span className="error">{set.error.message}</span>}
    </span>
  );
}

function ShareChart({ history }: { history: ShareHistory }) {
  const names = useMemo(() => busiestModels(history, COLORS.length), [history]);
  const x = useMemo(() => history.points.map((p) => p.at / 1000), [history]);
  const series = useMemo(
    () =>
      names.flatMap((name, i) => [
        {
          name: `${name} share`,
          values: history.points.map((p) => (p.busySeconds > 0 ? 100 * (p.device[name] ?? 0) : null)),
          color: COLORS[i]!,
        },
        {
          name: `${name} weight`,
          values: history.points.map((p) => 100 * (p.weight[name] ?? 0)),
          color: `${COLORS[i]!}66`,
        },
      ]),
    [names, history],
  );
  if (history.points.length < 2 || names.length === 0)
    return (
      <p className="muted" data-testid="share-empty">
        No device time used since this screen opened; the chart starts with the first batch.
      </p>
    );
  // The window grows with the history (1, 2, then 5 minutes), so the first minute is not a sliver.
  const span = x.length > 1 ? x[x.length - 1]! - x[0]! : 0;
  const windowS = span < 55 ? 60 : span < 115 ? 120 : 300;
  return <Sparkline label="device time share and weight share, percent" x={x} series={series} windowS={windowS} />;
}

function QueueTable({ rows }: { rows: readonly QueueRow[] }) {
  if (rows.length === 0) return <p className="muted">No models are scheduled.</p>;
  return (
    <table className="plain queue-table" data-testid="queue-table">
      <thead>
        <tr>
          <th>model</th>
          <th className="num">queued</th>
          <th className="num">oldest wait</th>
          <th>device share vs weight</th>
          <th className="num">deadline misses</th>
          <th className="num wide">in flight</th>
          <th className="num wide">weight</th>
          <th className="num wide">contended</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={r.name} data-testid="queue-row">
            <td>
              <Link to={`/models/${encodeURIComponent(r.name)}`}>{r.name}</Link>
            </td>
            <td className="num">{r.depth}</td>
            <td className="num">{r.oldestWaitMs ? formatMs(r.oldestWaitMs) : '–'}</td>
            <td>
              <div className="row" style={{ flexWrap: 'nowrap' }}>
                <div
                  className="sharebar"
                  role="img"
                  aria-label={`${r.name}: ${pct(r.deviceShare)} of device time, ${pct(r.weightShare)} of weight`}
                >
                  <span style={{ width: `${100 * (r.deviceShare ?? 0)}%` }} />
                  <i style={{ left: `${100 * r.weightShare}%` }} />
                </div>
                <span>{pct(r.deviceShare)}</span>
              </div>
            </td>
            <td className={`num${r.deadlineMisses ? ' error' : ''}`}>{r.deadlineMisses}</td>
            <td className="num wide">{r.inflight}</td>
            <td className="num wide">
              {r.weight} <span className="muted">({pct(r.weightShare)})</span>
            </td>
            <td className="num wide">{pct(r.contendedShare)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
