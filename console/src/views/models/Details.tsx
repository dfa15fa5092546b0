import { useMemo, useState } from 'react';
import { ApiError } from '../../api/errors.js';
import { whereResident } from '../../api/reducers.js';
import type { EventRecord, ModelAction, ModelInfo, ModelPolicy, Scope } from '../../api/types.js';
import {
  useControlMode,
  useEvents,
  useModel,
  useModelAction,
  useModelMetrics,
  usePolicyUpdate,
} from '../../app/data.js';
import { canOperate, modelActionVerdict } from '../../app/permissions.js';
import { Link } from '../../app/router.js';
import { useSession } from '../../app/session.js';
import { ActionButton } from '../../components/ActionButton.js';
import { formatBytes, formatMs, formatTime } from '../../components/format.js';
import { QueryState } from '../../components/QueryState.js';
import { Sparkline } from '../../components/Sparkline.js';
import { diffPolicy, policyPatch, validatePolicy } from './policy.js';
import { curlSnippet, tritonclientSnippet } from './snippets.js';

const tabs = ['Overview', 'Performance', 'Residency', 'Policy', 'Try it'] as const;
type Tab = (typeof tabs)[number];

export function ModelDetails({ name }: { name: string }) {
  const model = useModel(name);
  const session = useSession();
  const controlMode = useControlMode();
  const [tab, setTab] = useState<Tab>('Overview');
  const m = model.data;
  return (
    <>
      <p>
        <Link to="/models">← Models</Link>
      </p>
      <h1>
        {name} {m && <span className="muted">v{m.version}</span>}
      </h1>
      <QueryState isLoading={model.isLoading} error={model.error}>
        {m === null ? (
          <p className="error">No model named {name}: it may have been removed from the repository.</p>
        ) : m ? (
          <>
            <Actions model={m} scope={session.data?.scope} controlMode={controlMode} />
            <div className="tabs" role="tablist" aria-label="model detail">
              {tabs.map((t) => (
                <button key={t} type="button" role="tab" aria-selected={tab === t} onClick={() => setTab(t)}>
                  {t}
                </button>
              ))}
            </div>
            <div role="tabpanel" aria-label={tab}>
              {tab === 'Overview' && <OverviewTab model={m} />}
              {tab === 'Performance' && <PerformanceTab model={m} />}
              {tab === 'Residency' && <ResidencyTab model={m} />}
              {tab === 'Policy' && <PolicyTab model={m} editable={canOperate(session.data?.scope)} />}
              {tab === 'Try it' && <TryIt model={m} />}
            </div>
          </>
        ) : null}
      </QueryState>
    </>
  );
}

function Actions(props: { model: ModelInfo; scope: Scope | undefined; controlMode: string | undefined }) {
  const { model, scope, controlMode } = props;
  const act = useModelAction();
  const [error, setError] = useState<string | null>(null);
  const r = model.residency;
  const summary = (
    <div className="row" style={{ gap: 14 }}>
      <span className={`pill ${model.state.toLowerCase()}`}>{model.state.toLowerCase()}</span>
      {model.reason && <span className="muted">{model.reason}</span>}
      <span>
        weights on <strong>{whereResident(r)}</strong> ({formatBytes(r?.weightBytes)})
      </span>
      <span>pin: {r?.floor ?? model.policy?.residency ?? 'unpinned'}</span>
      <span className="muted">compiled batch sizes {model.batchSizes.join(', ')}</span>
    </div>
  );
  if (!canOperate(scope)) return <div className="panel">{summary}</div>;
  const run = (action: ModelAction, pinTo?: 'system' | 'device') => {
    setError(null);
    act.mutate(
      { name: model.name, action, pinTo },
      { onError: (e) => setError(e instanceof ApiError ? `${e.message} (${e.code})` : String(e)) },
    );
  };
  const v = (a: ModelAction) => modelActionVerdict(a, model, scope, controlMode);
  const pinVerdict = v('pin');
  const systemPin = r?.floor === 'system' ? { allowed: false, whyNot: 'already pinned in host memory' } : pinVerdict;
  return (
    <div className="panel" data-testid="model-actions">
      {summary}
      <div className="row" style={{ marginTop: 10 }}>
        {(['load', 'unload', 'reload', 'drain'] as const).map((a) => (
          <ActionButton
            key={a}
            verdict={v(a)}
            onClick={() => run(a)}
            busy={act.isPending && act.variables?.action === a}
            testId={`action-${a}`}
          >
            {a}
          </ActionButton>
        ))}
        <ActionButton verdict={pinVerdict} onClick={() => run('pin', 'device')} testId="action-pin">
          pin on device
        </ActionButton>
        <ActionButton verdict={systemPin} onClick={() => run('pin', 'system')} testId="action-pin-system">
          pin in host memory
        </ActionButton>
        <ActionButton verdict={v('unpin')} onClick={() => run('unpin')} testId="action-unpin">
          unpin
        </ActionButton>
      </div>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}

function OverviewTab({ model }: { model: ModelInfo }) {
  const s = model.stats;
  const httpBase = `${location.protocol}//${location.hostname}:8000`;
  return (
    <>
      <section className="panel">
        <h2>Compiled sizes</h2>
        <table className="plain">
          <thead>
            <tr>
              <th>batch size</th>
              <th className="num">learned cost per call</th>
              <th className="num">per item</th>
            </tr>
          </thead>
          <tbody>
            {model.batchSizes.map((b) => {
              const c = s?.costSeconds[String(b)];
              return (
                <tr key={b}>
                  <td>{b}</td>
                  <td className="num">{c === undefined ? 'not measured yet' : formatMs(c * 1000)}</td>
                  <td className="num">{c === undefined ? '–' : formatMs((c * 1000) / b)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </section>
      <section className="panel">
        <h2>Inputs and outputs</h2>
        <p className="muted">
          The manifest's tensors (named axes, wire shapes) are served by the KServe endpoint:{' '}
          <code>
            GET {httpBase}/v2/models/{model.name}
          </code>
          .
        </p>
      </section>
    </>
  );
}

function PerformanceTab({ model }: { model: ModelInfo }) {
  const history = useModelMetrics(model.name);
  const s = model.stats;
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

const residencyKinds = /load|evict|pin|residen|unload|upload/i;

function ResidencyTab({ model }: { model: ModelInfo }) {
  const events = useEvents();
  const r = model.residency;
  const mine = useMemo(
    () => (events.data ?? []).filter((e: EventRecord) => e.model === model.name && residencyKinds.test(e.kind)),
    [events.data, model.name],
  );
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
      <section className="panel">
        <h2>Timeline</h2>
        <QueryState isLoading={events.isLoading} error={events.error}>
          {mine.length === 0 ? (
            <p className="muted">No loads or evictions recorded for this model.</p>
          ) : (
            <table className="plain">
              <thead>
                <tr>
                  <th>when</th>
                  <th>event</th>
                  <th>details (reason)</th>
                </tr>
              </thead>
              <tbody>
                {mine.map((e) => (
                  <tr key={e.seq}>
                    <td>{formatTime(e.at)}</td>
                    <td>{e.kind}</td>
                    <td className="mono json">{JSON.stringify(e.data)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </QueryState>
      </section>
    </>
  );
}

const defaultPolicy: ModelPolicy = { residency: 'unpinned', weight: 1, maxBatchSize: null, maxQueueDelayUs: null };

function PolicyTab({ model, editable }: { model: ModelInfo; editable: boolean }) {
  const current = model.policy ?? defaultPolicy;
  const [draft, setDraft] = useState<ModelPolicy>(current);
  const [reviewing, setReviewing] = useState(false);
  const update = usePolicyUpdate(model.name);
  const errors = validatePolicy(draft);
  const changes = diffPolicy(current, draft);
  const optionalInt = (key: 'maxBatchSize' | 'maxQueueDelayUs', label: string, placeholder: string) => (
    <label className="field">
      {label}
      <input
        type="number"
        value={draft[key] ?? ''}
        placeholder={placeholder}
        disabled={!editable}
        onChange={(e) => setDraft({ ...draft, [key]: e.target.value === '' ? null : e.target.valueAsNumber })}
        data-testid={`policy-${key}`}
      />
      {errors[key] && <span className="error">{errors[key]}</span>}
    </label>
  );
  return (
    <section className="panel" data-testid="policy">
      <h2>Policy</h2>
      {!editable && <p className="muted">Read-only: changing a policy needs an operator or admin token.</p>}
      <div className="row" style={{ alignItems: 'flex-start' }}>
        <label className="field">
          Residency floor
          <select
            value={draft.residency}
            disabled={!editable}
            onChange={(e) => setDraft({ ...draft, residency: e.target.value as ModelPolicy['residency'] })}
          >
            <option value="unpinned">unpinned (evictable)</option>
            <option value="system">system (pinned in host memory)</option>
            <option value="device">device (pinned on the device)</option>
          </select>
        </label>
        <label className="field">
          Weight (fair share)
          <input
            type="number"
            step="any"
            value={draft.weight}
            disabled={!editable}
            onChange={(e) => setDraft({ ...draft, weight: e.target.valueAsNumber })}
            data-testid="policy-weight"
          />
          {errors.weight && <span className="error">{errors.weight}</span>}
        </label>
        {optionalInt('maxBatchSize', 'Max batch size', `largest (${Math.max(...model.batchSizes)})`)}
        {optionalInt('maxQueueDelayUs', 'Batching window (µs)', 'scheduler default')}
      </div>
      {editable && (
        <div style={{ marginTop: 12 }}>
          {!reviewing ? (
            <button
              type="button"
              className="primary"
              disabled={changes.length === 0 || Object.keys(errors).length > 0}
              onClick={() => setReviewing(true)}
              data-testid="policy-review"
            >
              Review {changes.length} change{changes.length === 1 ? '' : 's'}
            </button>
          ) : (
            <div className="diff" data-testid="policy-diff">
              <ul>
                {changes.map((c) => (
                  <li key={c.key}>
                    <strong>{c.key}</strong>: <span className="old">{String(c.before ?? 'default')}</span> →{' '}
                    <span className="new">{String(c.after ?? 'default')}</span>
                  </li>
                ))}
              </ul>
              <div className="row">
                <button
                  type="button"
                  className="primary"
                  disabled={update.isPending}
                  onClick={() => update.mutate(policyPatch(changes), { onSuccess: () => setReviewing(false) })}
                >
                  Apply (persisted, audited)
                </button>
                <button type="button" onClick={() => setReviewing(false)}>
                  Back
                </button>
              </div>
              {update.error && <p className="error">{update.error.message}</p>}
            </div>
          )}
        </div>
      )}
    </section>
  );
}

function TryIt({ model }: { model: ModelInfo }) {
  const host = location.hostname;
  return (
    <section className="panel">
      <h2>Try it</h2>
      <p className="muted">
        Ask the server for the model's inputs and send it a zero input of that shape, over KServe V2 HTTP (port 8000 by
        default) or with Triton's Python client over gRPC (port 8001).
      </p>
      <h3>curl</h3>
      <pre data-testid="curl-snippet">{curlSnippet(`http://${host}:8000`, model.name)}</pre>
      <h3>tritonclient (Python, gRPC)</h3>
      <pre>{tritonclientSnippet(`${host}:8001`, model.name)}</pre>
    </section>
  );
}
