import { useVirtualizer } from '@tanstack/react-virtual';
import { memo, useDeferredValue, useMemo, useRef, useState, type KeyboardEvent } from 'react';
import type { ModelAction, ModelSummary, Session } from '../../api/types.js';
import { useModelAction, useModels } from '../../app/data.js';
import { canOperate, modelActionVerdict } from '../../app/permissions.js';
import { Link, navigate } from '../../app/router.js';
import { useSession } from '../../app/session.js';
import { formatAgo, formatBytes, formatMs, formatRate } from '../../components/format.js';
import { QueryState } from '../../components/QueryState.js';
import { defaultQuery, selectModels, type SortKey, type TableQuery } from './filter.js';

const ROW_HEIGHT = 36;
const columns: readonly { key: SortKey; label: string; num?: boolean }[] = [
  { key: 'name', label: 'Model' },
  { key: 'state', label: 'State' },
  { key: 'resident', label: 'Where' },
  { key: 'residentBytes', label: 'Bytes', num: true },
  { key: 'queueDepth', label: 'Queue', num: true },
  { key: 'inFlight', label: 'In flight', num: true },
  { key: 'requestsPerSecond', label: 'req/s', num: true },
  { key: 'p99Ms', label: 'p99', num: true },
  { key: 'loads', label: 'Loads', num: true },
  { key: 'evictions', label: 'Evicts', num: true },
  { key: 'lastUsedMs', label: 'Last used', num: true },
];
const bulkActions: readonly ModelAction[] = ['load', 'unload', 'pin', 'unpin', 'reload'];

export function ModelList() {
  const models = useModels();
  const session = useSession();
  const [query, setQuery] = useState<TableQuery>(defaultQuery);
  const deferred = useDeferredValue(query);
  const rows = useMemo(() => selectModels(models.data ?? [], deferred), [models.data, deferred]);
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

  const toggle = (name: string) =>
    setSelected((s) => {
      const n = new Set(s);
      if (n.has(name)) n.delete(name);
      else n.add(name);
      return n;
    });
  const sortBy = (key: SortKey) => setQuery((q) => ({ ...q, sort: key, desc: q.sort === key ? !q.desc : false }));

  // Arrow keys move through rows, Enter opens one, Space selects it: the table is usable without a mouse.
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
      {session.data?.controlMode === 'static' && (
        <p className="panel muted">
          Static mode: the repository decides what is loaded; load and unload are refused. Pins and policies still
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
            {['all', 'ready', 'loading', 'compiling', 'validating', 'registered', 'unloaded', 'failed'].map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
        <label className="field">
          Residency
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
          {rows.length} of {models.data?.length ?? 0} models
        </span>
      </div>
      {operate && selected.size > 0 && (
        <BulkBar
          selected={selected}
          models={models.data ?? []}
          session={session.data}
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
            aria-label="model rows; arrow keys move, Enter opens"
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
              {virtual.getVirtualItems().map((v) => {
                const m = rows[v.index]!;
                return (
                  <Row
                    key={m.name}
                    model={m}
                    top={v.start}
                    index={v.index}
                    active={v.index === active}
                    selected={selected.has(m.name)}
                    operate={operate}
                    onToggle={toggle}
                  />
                );
              })}
            </div>
          </div>
        </div>
      </QueryState>
    </>
  );
}

const Row = memo(function Row(props: {
  model: ModelSummary;
  top: number;
  index: number;
  active: boolean;
  selected: boolean;
  operate: boolean;
  onToggle: (name: string) => void;
}) {
  const { model: m, top, index, active, selected, operate, onToggle } = props;
  return (
    <div
      className="vrow"
      role="row"
      aria-rowindex={index + 2}
      aria-selected={selected}
      data-testid="model-row"
      style={{
        position: 'absolute',
        top,
        left: 0,
        right: 0,
        height: ROW_HEIGHT,
        outline: active ? '1px solid var(--focus)' : undefined,
      }}
    >
      <span role="cell">
        {operate && (
          <input
            type="checkbox"
            aria-label={`select ${m.name}`}
            checked={selected}
            onChange={() => onToggle(m.name)}
            tabIndex={-1}
          />
        )}
      </span>
      <span role="cell" title={m.name}>
        <Link to={`/models/${encodeURIComponent(m.name)}`} tabIndex={-1}>
          {m.name}
        </Link>{' '}
        <span className="muted">v{m.version}</span>
      </span>
      <span role="cell">
        <span className={`pill ${m.state}`}>{m.state}</span>
      </span>
      <span role="cell">
        {m.resident}
        {m.pin !== 'unpinned' && (
          <span className="pill pinned" title={`pinned to ${m.pin}`}>
            {' '}
            📌
          </span>
        )}
      </span>
      <span role="cell" className="num">
        {formatBytes(m.residentBytes)}
      </span>
      <span role="cell" className="num">
        {m.queueDepth}
      </span>
      <span role="cell" className="num">
        {m.inFlight}
      </span>
      <span role="cell" className="num">
        {formatRate(m.requestsPerSecond)}
      </span>
      <span role="cell" className="num">
        {formatMs(m.p99Ms)}
      </span>
      <span role="cell" className="num">
        {m.loads}
      </span>
      <span role="cell" className="num">
        {m.evictions}
      </span>
      <span role="cell" className="num">
        {formatAgo(m.lastUsedMs)}
      </span>
    </div>
  );
});

function BulkBar({
  selected,
  models,
  session,
  onDone,
}: {
  selected: ReadonlySet<string>;
  models: readonly ModelSummary[];
  session: Session | undefined;
  onDone: () => void;
}) {
  const act = useModelAction();
  const [report, setReport] = useState<string | null>(null);
  const chosen = models.filter((m) => selected.has(m.name));
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
        const verdicts = chosen.map((m) => ({ m, v: modelActionVerdict(a, m, session) }));
        const able = verdicts.filter((x) => x.v.allowed).map((x) => x.m.name);
        const reasons = [...new Set(verdicts.filter((x) => !x.v.allowed).map((x) => x.v.whyNot))];
        return (
          <button
            key={a}
            type="button"
            disabled={able.length === 0 || act.isPending}
            title={reasons.length ? `${chosen.length - able.length} skipped: ${reasons.join('; ')}` : undefined}
            onClick={() => void run(a, able)}
          >
            {a} {able.length < chosen.length ? `(${able.length})` : ''}
          </button>
        );
      })}
      {report && <span className="muted">{report}</span>}
    </div>
  );
}
