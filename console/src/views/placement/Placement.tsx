import { useState } from 'react';
import type { ModelPlacementView, PlacementAction, PlacementView } from '../../api/placement.js';
import { usePlacementAction, usePlacementAudit, usePlacements } from '../../app/fleet.js';
import { Link } from '../../app/router.js';
import { useSession } from '../../app/session.js';
import { ActionButton } from '../../components/ActionButton.js';
import { QueryState } from '../../components/QueryState.js';
import { moveTargets, placementState, placementVerdict, stateLabel, weightLabel } from './placement-model.js';

/** Models x workers behind the gateway: where each model is placed (desired) and resident (actual). */
export function Placement() {
  const view = usePlacements();
  const session = useSession();
  const audit = usePlacementAudit(view.data != null);
  return (
    <>
      <h1>Placement</h1>
      <QueryState isLoading={view.isLoading} error={view.error}>
        {view.data == null ? (
          <p className="muted">This console is served by a single worker: there is no fleet to place models on.</p>
        ) : (
          <>
            <p className="muted" data-testid="placement-mode">
              Routing: <strong>{view.data.mode}</strong> · {view.data.workers.length} workers · {view.data.repacks}{' '}
              packings
              {view.data.actions ? '' : ' · actions need lpt_packing'}
            </p>
            <div className="card" style={{ overflowX: 'auto' }}>
              <table className="placement" data-testid="placement-table">
                <thead>
                  <tr>
                    <th scope="col">Model</th>
                    {view.data.workers.map((w) => (
                      <th key={w.name} scope="col" title={`${w.outstanding} in flight`}>
                        {w.ready && w.console ? (
                          // That worker's screens, from its overview (the picker's choice, by link).
                          <Link
                            to={`/?worker=${encodeURIComponent(w.name)}`}
                            className="mono"
                            aria-label={`open ${w.name}'s screens`}
                          >
                            {w.name}
                          </Link>
                        ) : (
                          <span className="mono">{w.name}</span>
                        )}
                        {!w.ready && <span className="whynot"> down</span>}
                        {w.computeLoad !== null && <div className="muted">load {w.computeLoad.toFixed(2)}</div>}
                      </th>
                    ))}
                    <th scope="col">Replicas</th>
                    <th scope="col">State</th>
                    <th scope="col">Actions</th>
                  </tr>
                </thead>
                <tbody>
                  {view.data.models.map((m) => (
                    <Row key={m.name} m={m} view={view.data!} scope={session.data?.scope} />
                  ))}
                </tbody>
              </table>
            </div>
            <p className="muted">
              ● placed (the gateway sends its traffic there; with several replicas, the share each takes) · ◆ weights
              resident on that worker · ○ held, not placed
            </p>
            <h2>Placement audit</h2>
            <QueryState isLoading={audit.isLoading} error={audit.error}>
              {(audit.data ?? []).length === 0 ? (
                <p className="muted">No placement actions yet.</p>
              ) : (
                <ul data-testid="placement-audit">
                  {(audit.data ?? []).map((e) => (
                    <li key={e.seq}>
                      <span className="muted">{new Date(e.at).toLocaleString()}</span> {e.actorName}{' '}
                      <span className="mono">{e.action}</span> {e.target}: {e.before.workers.join(', ') || '-'} →{' '}
                      {e.after.workers.join(', ') || '-'}
                    </li>
                  ))}
                </ul>
              )}
            </QueryState>
          </>
        )}
      </QueryState>
    </>
  );
}

function Row({
  m,
  view,
  scope,
}: {
  m: ModelPlacementView;
  view: PlacementView;
  scope: Parameters<typeof placementVerdict>[3];
}) {
  const act = usePlacementAction();
  const targets = moveTargets(m, view);
  const [from, setFrom] = useState<string>('');
  const [to, setTo] = useState<string>('');
  const run = (action: PlacementAction, extra: { from?: string; to?: string } = {}) =>
    act.mutate({ model: m.name, action, ...extra });
  const verdict = (a: PlacementAction) => placementVerdict(a, m, view, scope);
  const state = placementState(m);
  const moveFrom = from || m.placed[0] || '';
  const moveTo = to || targets[0] || '';
  return (
    <tr data-testid={`placement-row-${m.name}`}>
      <th scope="row" className="mono">
        {m.name}
        {m.pinned && <span className="muted"> (moved by hand)</span>}
      </th>
      {m.cells.map((c) => (
        <td
          key={c.worker}
          aria-label={`${m.name} on ${c.worker}: ${c.placed ? 'placed' : c.ready ? 'held, not placed' : 'not held'}${weightLabel(m, c) ? ` (${weightLabel(m, c)} of its traffic)` : ''}${c.resident ? ', resident' : ''}`}
        >
          {c.placed ? '●' : c.ready ? '○' : ''}
          {weightLabel(m, c) ? <span className="muted"> {weightLabel(m, c)}</span> : null}
          {c.resident ? ' ◆' : ''}
        </td>
      ))}
      <td>
        {m.placed.length} / {m.desiredReplicas}
      </td>
      <td className={state === 'in_place' ? 'muted' : 'whynot'}>{stateLabel[state]}</td>
      <td>
        {scope === 'viewer' ? null : (
          <span className="row" style={{ gap: 6, flexWrap: 'wrap' }}>
            <ActionButton
              verdict={verdict('add_replica')}
              busy={act.isPending}
              onClick={() => run('add_replica')}
              testId={`add-${m.name}`}
            >
              + replica
            </ActionButton>
            <ActionButton
              verdict={verdict('remove_replica')}
              busy={act.isPending}
              onClick={() => run('remove_replica')}
              testId={`remove-${m.name}`}
            >
              − replica
            </ActionButton>
            {verdict('move').allowed && (
              <>
                <select aria-label={`move ${m.name} from`} value={moveFrom} onChange={(e) => setFrom(e.target.value)}>
                  {m.placed.map((w) => (
                    <option key={w}>{w}</option>
                  ))}
                </select>
                →
                <select aria-label={`move ${m.name} to`} value={moveTo} onChange={(e) => setTo(e.target.value)}>
                  {targets.map((w) => (
                    <option key={w}>{w}</option>
                  ))}
                </select>
              </>
            )}
            <ActionButton
              verdict={verdict('move')}
              busy={act.isPending}
              onClick={() => run('move', { from: moveFrom, to: moveTo })}
              testId={`move-${m.name}`}
            >
              Move
            </ActionButton>
            {m.pinned && (
              <ActionButton
                verdict={verdict('release')}
                busy={act.isPending}
                onClick={() => run('release')}
                testId={`release-${m.name}`}
              >
                Back to measured
              </ActionButton>
            )}
            {act.error && (
              <span className="error" role="alert">
                {(act.error as Error).message}
              </span>
            )}
          </span>
        )}
      </td>
    </tr>
  );
}
