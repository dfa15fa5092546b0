import { useMemo, useState } from 'react';
import { useAudit, useEvents } from '../app/data.js';
import { canOperate } from '../app/permissions.js';
import { useSession } from '../app/session.js';
import { formatTime } from '../components/format.js';
import { QueryState } from '../components/QueryState.js';
import { toCsv } from './activity-export.js';
import { currentWorker } from '../api/worker-choice.js';

/** Behind a gateway the file says whose log it is: `hloserve-worker1-audit.json`. */
function exportName(tab: string): string {
  const worker = currentWorker();
  return worker === null ? tab : `${worker}-${tab}`;
}

function download(name: string, type: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  URL.revokeObjectURL(url);
}

/** The audit log (operator and admin tokens) and the engine's event stream, filtered, exportable. */
export function Activity() {
  const session = useSession();
  const mayAudit = canOperate(session.data?.scope);
  const [tab, setTab] = useState<'audit' | 'events'>(mayAudit ? 'audit' : 'events');
  const [filter, setFilter] = useState('');
  const audit = useAudit(mayAudit && tab === 'audit');
  const events = useEvents();
  const needle = filter.trim().toLowerCase();
  const auditRows = useMemo(
    () =>
      (audit.data ?? []).filter(
        (e) => !needle || `${e.actor} ${e.action} ${e.target} ${e.result}`.toLowerCase().includes(needle),
      ),
    [audit.data, needle],
  );
  const eventRows = useMemo(
    () =>
      (events.data ?? []).filter(
        (e) => !needle || `${e.kind} ${e.model ?? ''} ${JSON.stringify(e.data)}`.toLowerCase().includes(needle),
      ),
    [events.data, needle],
  );
  const rows: readonly object[] = tab === 'audit' ? auditRows : eventRows;
  return (
    <>
      <h1>Activity</h1>
      <div className="tabs" role="tablist" aria-label="activity">
        {mayAudit && (
          <button type="button" role="tab" aria-selected={tab === 'audit'} onClick={() => setTab('audit')}>
            Audit log
          </button>
        )}
        <button type="button" role="tab" aria-selected={tab === 'events'} onClick={() => setTab('events')}>
          Engine events
        </button>
      </div>
      <div className="panel row">
        <label className="field">
          Filter
          <input
            type="search"
            value={filter}
            onChange={(e) => setFilter(e.target.value)}
            placeholder="actor, action, model…"
          />
        </label>
        <span className="muted">{rows.length} shown</span>
        <span style={{ flex: 1 }} />
        <button
          type="button"
          onClick={() =>
            download(`hloserve-${exportName(tab)}.json`, 'application/json', JSON.stringify(rows, null, 2))
          }
        >
          Export JSON
        </button>
        <button type="button" onClick={() => download(`hloserve-${exportName(tab)}.csv`, 'text/csv', toCsv(rows))}>
          Export CSV
        </button>
      </div>
      <div className="panel" style={{ overflowX: 'auto' }}>
        {tab === 'audit' ? (
          <QueryState isLoading={audit.isLoading} error={audit.error}>
            <table className="plain" data-testid="audit-table">
              <thead>
                <tr>
                  <th>time</th>
                  <th>actor</th>
                  <th>action</th>
                  <th>target</th>
                  <th>before → after</th>
                  <th>result</th>
                </tr>
              </thead>
              <tbody>
                {auditRows.map((e) => (
                  <tr key={e.seq}>
                    <td>{formatTime(e.at)}</td>
                    <td>{e.actor}</td>
                    <td>{e.action}</td>
                    <td className="mono">{e.target}</td>
                    <td className="mono json">
                      {JSON.stringify(e.before)} → {JSON.stringify(e.after)}
                    </td>
                    <td>{e.result}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            {auditRows.length === 0 && <p className="muted">No audit records{needle ? ' match' : ''}.</p>}
          </QueryState>
        ) : (
          <QueryState isLoading={events.isLoading} error={events.error}>
            <table className="plain" data-testid="events-table">
              <thead>
                <tr>
                  <th>time</th>
                  <th>kind</th>
                  <th>model</th>
                  <th>details</th>
                </tr>
              </thead>
              <tbody>
                {eventRows.map((e) => (
                  <tr key={e.seq}>
                    <td>{formatTime(e.at)}</td>
                    <td>{e.kind}</td>
                    <td className="mono">{e.model ?? ''}</td>
                    <td className="mono json">{JSON.stringify(e.data)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            {eventRows.length === 0 && <p className="muted">No events{needle ? ' match' : ''}.</p>}
          </QueryState>
        )}
      </div>
    </>
  );
}
