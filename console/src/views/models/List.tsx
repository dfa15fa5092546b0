import { useVirtualizer } from '@tanstack/react-virtual';
import { memo, useCallback, useDeferredValue, useEffect, useMemo, useRef, useState, type KeyboardEvent } from 'react';
import type { MetricsState, ModelAction, Scope } from '../../api/types.js';
import { useControlMode, useMetrics, useModelAction, useModels } from '../../app/data.js';
import { canOperate, modelActionVerdict } from '../../app/permissions.js';
import { Link, navigate } from '../../app/router.js';
import { useSession } from '../../app/session.js';
import { agoChangesInMs, formatAgo, formatBytes, formatMs, formatRate } from '../../components/format.js';
import { QueryState } from '../../components/QueryState.js';
import {
  defaultQuery,
  filterRows,
  sortRows,
  toRows,
  type ModelRow,
  type RowCache,
  type SortKey,
  type TableQuery,
} from './filter.js';

const ROW_HEIGHT = 36;
/** The shortest time from a render to one for the clock alone. */
const AGO_TICK_MS = 1500;
const columns: readonly { key: SortKey; label: string; num?: boolean }[] = [
  { key: 'name', label: 'Model' },
  { key: 'state', label: 'State' },
  { key: 'where', label: 'Weights on' },
  { key: 'bytes', label: 'Bytes', num: true },
  { key: 'queueDepth', label: 'Queue', num: true },
  { key: 'inFlight', label: 'In flight', num: true },
  { key: 'requestsPerSecond', label: 'req/s', num: true },
  { key: 'p99', label: 'p99', num: true },
  { key: 'served', label: 'Served', num: true },
  { key: 'loads', label: 'Loads', num: true },
  { key: 'evictions', label: 'Evicts', num: true },
  { key: 'lastUsed', label: 'Last used', num: true },
];
const bulkActions: readonly ModelAction[] = ['load', 'unload', 'reload', 'pin', 'unpin'];
const states = ['all', 'READY', 'LOADING', 'UNLOADING', 'UNAVAILABLE', 'UNKNOWN'] as const;

const latestSamples = (s: MetricsState) => s.latest;

export function ModelList() {
  const models = useModels();
  const latest = useMetrics(latestSamples).data;
  const session = useSession();
  const controlMode = useControlMode();
  const [query, setQuery] = useState<TableQuery>(defaultQuery);
  const deferred = useDeferredValue(query);
  const [rowCache] = useState<RowCache>(() => new WeakMap());
  const all = useMemo(() => toRows(models.data ?? [], latest, rowCache), [models.data, latest, rowCache]);
  const sorted = useMemo(() => sortRows(all, query.sort, query.desc), [all, query.sort, query.desc]);
  const rows = useMemo(() => filterRows(sorted, deferred), [sorted, deferred]);
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const operate = canOperate(session.data?.scope);
  const scroller = useRef<HTMLDivElement>(null);
  const virtual = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 12,
  });
  const [active, setActive] = useState(0);
  const shown = virtual.getVirtualItems();
  const now = useAgoClock(shown.map((v) => rows[v.index]!.lastUsed));

  const toggle = useCallback(
    (name: string) =>
      setSelected((s) => {
        const n = new Set(s);
        if (n.has(name)) n.delete(name);
        else n.add(name);
        return n;
      }),
    [],
  );
  const sortBy = (key: SortKey) => setQuery((q) => ({ ...q, sort: key, desc: q.sort === key ? !q.desc : false }));

  // Arrow keys move through rows, Enter opens one, Space selects it: the table works without a mouse.
  const onKey = (e: KeyboardEvent<HTMLDivElement>) => {
    if (rows.length === 0) return;
    let next = active;
    if (e.key === 'ArrowDown') next = Math.min(rows.length - 1, active + 1);
    else if (e.key === 'ArrowUp') next = Math.max(0, active - 1);
    else if (e.key === 'PageDown') next = Math.min(rows.length - 1, active + 15);
    else if (e.key === 'PageUp') next = Math.max(0, active - 15);
    else if (e.key === 'Home') next = 0;
    else if (e.key === 'End') next = rows.length - 1;
    else if (e.key === 'Enter') return navigate(`/models/${encodeURIComponent(rows[active]!.name)}`);
    else if (e.key === ' ' && operate) {
      e.preventDefault();
      return toggle(rows[active]!.name);
    } else return;
    e.preventDefault();
    setActive(next);
    virtual.scrollToIndex(next);
  };

  return (
    <>
      <h1>Models</h1>
      {controlMode === 'static' && (
        <p className="panel muted">
          Static mode: the repository decides what is loaded, so load and unload are refused. Pins and policies still
          apply.
        </p>
      )}
      <div className="panel row" role="search">
        <label className="field">
          Search
          <input
            type="search"
            placeholder="name or version"
            value={query.search}
            onChange={(e) => setQuery((q) => ({ ...q, search: e.target.value }))}
            data-testid="model-search"
          />
        </label>
        <label className="field">
          State
          <select
            value={query.state}
            onChange={(e) => setQuery((q) => ({ ...q, state: e.target.value as TableQuery['state'] }))}
            data-testid="state-filter"
          >
            {states.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
        <label className="field">
          Weights on
          <select
            value={query.residency}
            onChange={(e) => setQuery((q) => ({ ...q, residency: e.target.value as TableQuery['residency'] }))}
            data-testid="residency-filter"
          >
            {['all', 'device', 'host', 'none', 'pinned'].map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
        <span className="muted" data-testid="row-count" aria-live="polite">
          {rows.length} of {all.length} models
        </span>
      </div>
      {operate && selected.size > 0 && (
        <BulkBar
          chosen={all.filter((r) => selected.has(r.name))}
          scope={session.data?.scope}
          controlMode={controlMode}
          onDone={() => setSelected(new Set())}
        />
      )}
      <QueryState isLoading={models.isLoading} error={models.error}>
        <div className="vtable" role="table" aria-label="models" aria-rowcount={rows.length + 1}>
          <div
            className="scroller"
            ref={scroller}
            tabIndex={0}
            onKeyDown={onKey}
            data-testid="model-scroller"
            aria-label="model rows; arrow keys move, Enter opens, Space selects"
          >
            <div className="head" role="row" style={{ position: 'sticky', top: 0, zIndex: 1 }}>
              <span role="columnheader">
                {operate && (
                  <input
                    type="checkbox"
                    aria-label="select all shown"
                    checked={rows.length > 0 && rows.every((r) => selected.has(r.name))}
                    onChange={(e) => setSelected(e.target.checked ? new Set(rows.map((r) => r.name)) : new Set())}
                  />
                )}
              </span>
              {columns.map((c) => (
                <span
                  role="columnheader"
                  key={c.key}
                  aria-sort={query.sort === c.key ? (query.desc ? 'descending' : 'ascending') : 'none'}
                >
                  <button type="button" className={c.num ? 'num' : undefined} onClick={() => sortBy(c.key)}>
                    {c.label}
                    {query.sort === c.key ? (query.desc ? ' ▾' : ' ▴') : ''}
                  </button>
                </span>
              ))}
            </div>
            <div style={{ height: virtual.getTotalSize(), position: 'relative' }}>
              {shown.map((v) => {
                const r = rows[v.index]!;
                return (
                  <Row
                    key={r.name}
                    row={r}
                    top={v.start}
                    index={v.index}
                    active={v.index === active}
                    selected={selected.has(r.name)}
                    operate={operate}
                    onToggle={toggle}
                    now={now}
                  />
                );
              })}
            </div>
          </div>
        </div>
        {rows.length === 0 && <p className="muted">No model matches.</p>}
      </QueryState>
    </>
  );
}

/**
 * The time the shown rows' "last used" is told against, taken at each render. When no feed update
 * renders the table before one of them would read differently (an idle engine), a timer does, at
 * the soonest AGO_TICK_MS after the last render: longer than the feed's second, so that under load
 * the clock never renders between two updates (a busy row's "0s ago" would read "1s ago" for the
 * half second until the next), and each row's text changing at its own phase does not render the
 * table once per row.
 */
function useAgoClock(lastUsed: readonly (number | null)[]): number {
  const now = Date.now();
  const [, rerender] = useState(0);
  let next = Infinity;
  for (const ms of lastUsed) if (ms) next = Math.min(next, agoChangesInMs(ms, now));
  useEffect(() => {
    if (next === Infinity) return;
    const t = setTimeout(() => rerender((n) => n + 1), Math.max(next, AGO_TICK_MS));
    return () => clearTimeout(t);
  });
  return now;
}

interface RowProps {
  readonly row: ModelRow;
  readonly top: number;
  readonly index: number;
  readonly active: boolean;
  readonly selected: boolean;
  readonly operate: boolean;
  readonly onToggle: (name: string) => void;
  /** The time "last used" is told against. */
  readonly now: number;
}

const lastUsedText = (r: ModelRow, now: number) => (r.lastUsed === null ? '–' : formatAgo(r.lastUsed, now));

/**
 * A row renders again only when it shows something else: most rows of a large repository are idle
 * between two updates, and their row objects are reused (toRows), so only the clock could change
 * them, and only when their "last used" reads differently.
 */
function sameRow(a: RowProps, b: RowProps): boolean {
  for (const k of Object.keys(a) as (keyof RowProps)[]) if (k !== 'now' && a[k] !== b[k]) return false;
  return lastUsedText(a.row, a.now) === lastUsedText(b.row, b.now);
}

const Row = memo(function Row(props: RowProps) {
  const { row: r, top, index, active, selected, operate, onToggle, now } = props;
  return (
    <div
      className={`vrow${active ? ' active' : ''}`}
      role="row"
      aria-rowindex={index + 2}
      aria-selected={selected}
      data-testid="model-row"
      style={{ position: 'absolute', top, left: 0, right: 0, height: ROW_HEIGHT }}
    >
      <span role="cell">
        {operate && (
          <input
            type="checkbox"
            aria-label={`select ${r.name}`}
            checked={selected}
            onChange={() => onToggle(r.name)}
            tabIndex={-1}
          />
        )}
      </span>
      <span role="cell" title={`${r.name} v${r.version}`}>
        <Link to={`/models/${encodeURIComponent(r.name)}`} tabIndex={-1}>
          {r.name}
        </Link>{' '}
        <span className="muted">v{r.version}</span>
      </span>
      <span role="cell">
        <span className={`pill ${r.state.toLowerCase()}`}>{r.state.toLowerCase()}</span>
      </span>
      <span role="cell">
        {r.where}
        {r.floor === 'device' && (
          <span className="pill pinned" title="pinned on the device">
            pinned
          </span>
        )}
      </span>
      <span role="cell" className="num">
        {formatBytes(r.bytes)}
      </span>
      <span role="cell" className="num">
        {r.queueDepth ?? '–'}
      </span>
      <span role="cell" className="num">
        {r.inFlight ?? '–'}
      </span>
      <span role="cell" className="num">
        {formatRate(r.requestsPerSecond)}
      </span>
      <span role="cell" className="num">
        {formatMs(r.p99)}
      </span>
      <span role="cell" className="num">
        {r.served ?? '–'}
      </span>
      <span role="cell" className="num">
        {r.loads ?? '–'}
      </span>
      <span role="cell" className="num">
        {r.evictions ?? '–'}
      </span>
      <span role="cell" className="num" title={r.lastUsed ? new Date(r.lastUsed).toISOString() : undefined}>
        {lastUsedText(r, now)}
      </span>
    </div>
  );
}, sameRow);

function BulkBar(props: {
  chosen: readonly ModelRow[];
  scope: Scope | undefined;
  controlMode: string | undefined;
  onDone: () => void;
}) {
  const { chosen, scope, controlMode, onDone } = props;
  const act = useModelAction();
  const [report, setReport] = useState<string | null>(null);
  async function run(action: ModelAction, names: readonly string[]) {
    let failed = 0;
    for (const name of names) {
      try {
        await act.mutateAsync({ name, action });
      } catch {
        failed++;
      }
    }
    setReport(`${action}: ${names.length - failed} done${failed ? `, ${failed} refused` : ''}`);
    onDone();
  }
  return (
    <div className="panel bulkbar row" data-testid="bulk-bar">
      <strong>{chosen.length} selected</strong>
      {bulkActions.map((a) => {
        const verdicts = chosen.map((r) => ({ r, v: modelActionVerdict(a, r.model, scope, controlMode) }));
        const able = verdicts.filter((x) => x.v.allowed).map((x) => x.r.name);
        const reasons = [...new Set(verdicts.filter((x) => !x.v.allowed).map((x) => x.v.whyNot))];
        const why = reasons.length ? `${chosen.length - able.length} skipped: ${reasons.join('; ')}` : undefined;
        return (
          <span key={a} className="row" style={{ gap: 4 }}>
            <button
              type="button"
              disabled={able.length === 0 || act.isPending}
              title={why}
              onClick={() => void run(a, able)}
            >
              {a}
              {able.length < chosen.length ? ` ${able.length}/${chosen.length}` : ''}
            </button>
          </span>
        );
      })}
      {chosen.length > 0 && <BulkWhyNot chosen={chosen} scope={scope} controlMode={controlMode} />}
      {report && <span className="muted">{report}</span>}
    </div>
  );
}

/** The reasons actions are refused for part of the selection, said once each. */
function BulkWhyNot(props: { chosen: readonly ModelRow[]; scope: Scope | undefined; controlMode: string | undefined }) {
  const lines = bulkActions.flatMap((a) => {
    const refused = props.chosen
      .map((r) => modelActionVerdict(a, r.model, props.scope, props.controlMode))
      .filter((v) => !v.allowed);
    if (refused.length === 0) return [];
    const reasons = [...new Set(refused.map((v) => v.whyNot))].join('; ');
    return [`${a}: ${refused.length} not (${reasons})`];
  });
  if (lines.length === 0) return null;
  return (
    <span className="whynot" data-testid="bulk-why-not">
      {lines.join(' · ')}
    </span>
  );
}
