import { useState } from 'react';
import { ApiError } from '../../api/errors.js';
import type { ModelAction, ModelDetail, Policy, Session, TensorSpec } from '../../api/types.js';
import { useModel, useModelAction, usePolicyUpdate, useSettings } from '../../app/data.js';
import { canOperate, modelActionVerdict } from '../../app/permissions.js';
import { Link } from '../../app/router.js';
import { useSession } from '../../app/session.js';
import { ActionButton } from '../../components/ActionButton.js';
import { formatAgo, formatBytes, formatMs, formatTime } from '../../components/format.js';
import { QueryState } from '../../components/QueryState.js';
import { curlSnippet, tritonclientSnippet } from './snippets.js';
import { diffPolicy, validatePolicy } from './policy.js';

const tabs = ['Overview', 'Residency', 'Policy', 'Try it'] as const;
type Tab = (typeof tabs)[number];

export function ModelDetails({ name }: { name: string }) {
  const model = useModel(name);
  const session = useSession();
  const [tab, setTab] = useState<Tab>('Overview');
  return (
    <>
      <p>
        <Link to="/models">← Models</Link>
      </p>
      <h1>
        {name} {model.data && <span className="muted">v{model.data.version}</span>}
      </h1>
      <QueryState isLoading={model.isLoading} error={model.error}>
        {model.data && (
          <>
            <Actions model={model.data} session={session.data} />
            <div className="tabs" role="tablist">
              {tabs.map((t) => (
                <button key={t} type="button" role="tab" aria-selected={tab === t} onClick={() => setTab(t)}>
                  {t}
                </button>
              ))}
            </div>
            <div role="tabpanel" aria-label={tab}>
              {tab === 'Overview' && <OverviewTab model={model.data} />}
              {tab === 'Residency' && <ResidencyTab model={model.data} />}
              {tab === 'Policy' && <PolicyTab model={model.data} editable={canOperate(session.data?.scope)} />}
              {tab === 'Try it' && <TryIt model={model.data} />}
            </div>
          </>
        )}
      </QueryState>
    </>
  );
}

function Actions({ model, session }: { model: ModelDetail; session: Session | undefined }) {
  const act = useModelAction();
  const [error, setError] = useState<string | null>(null);
  const summary = (
    <div className="row" style={{ gap: 14 }}>
      <span className={`pill ${model.state}`}>{model.state}</span>
      <span>
        on <strong>{model.resident}</strong> ({formatBytes(model.residentBytes)})
      </span>
      <span>pin: {model.pin}</span>
      <span className="muted">last used {formatAgo(model.lastUsedMs)}</span>
    </div>
  );
  if (!canOperate(session?.scope)) return <div className="panel">{summary}</div>;
  const run = (action: ModelAction) => {
    setError(null);
    act.mutate(
      { name: model.name, action },
      { onError: (e) => setError(e instanceof ApiError ? `${e.message} (${e.code})` : String(e)) },
    );
  };
  return (
    <div className="panel" data-testid="model-actions">
      {summary}
      <div className="row" style={{ marginTop: 10 }}>
        {(['load', 'unload', 'reload', 'pin', 'unpin'] as const).map((a) => (
          <ActionButton
            key={a}
            verdict={modelActionVerdict(a, model, session)}
            onClick={() => run(a)}
            busy={act.isPending && act.variables?.action === a}
            testId={`action-${a}`}
          >
            {a}
          </ActionButton>
        ))}
      </div>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}

function Io({ title, specs }: { title: string; specs: readonly TensorSpec[] }) {
  return (
    <section className="panel">
      <h2>{title}</h2>
      <table className="plain">
        <thead>
          <tr>
            <th>name</th>
            <th>dtype</th>
            <th>axes (manifest)</th>
            <th>wire shape</th>
          </tr>
        </thead>
        <tbody>
          {specs.map((s) => (
            <tr key={s.name}>
              <td className="mono">{s.name}</td>
              <td>{s.dtype}</td>
              <td className="mono">
                {s.shape} = [{s.dims.join(', ')}]
              </td>
              {/* The wire shape is the manifest's letters reversed: bytes are never transposed. */}
              <td className="mono">
                {[...s.shape].reverse().join('')} = [{[...s.dims].reverse().join(', ')}]
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function OverviewTab({ model }: { model: ModelDetail }) {
  return (
    <>
      <div className="grid">
        <Io title="Inputs" specs={model.inputs} />
        <Io title="Outputs" specs={model.outputs} />
      </div>
      <section className="panel">
        <h2>Compiled sizes</h2>
        <table className="plain">
          <thead>
            <tr>
              <th>batch size</th>
              <th className="num">executable</th>
              <th className="num">learned cost per call</th>
              <th className="num">per item</th>
            </tr>
          </thead>
          <tbody>
            {model.compiled.map((c) => (
              <tr key={c.batchSize}>
                <td>{c.batchSize}</td>
                <td className="num">{formatBytes(c.bytes)}</td>
                <td className="num">{formatMs(c.costMs)}</td>
                <td className="num">{c.costMs === null ? '–' : formatMs(c.costMs / c.batchSize)}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {model.hooks.length > 0 && (
          <p className="muted">Hooks: {model.hooks.join(', ')} (code running with the server's rights)</p>
        )}
      </section>
      <section className="panel">
        <h2>Versions</h2>
        <ul>
          {model.versions.map((v) => (
            <li key={v.version}>
              v{v.version} {v.isDefault && <span className="pill">default</span>}{' '}
              <span className="muted">{formatTime(v.createdMs)}</span>
            </li>
          ))}
        </ul>
      </section>
    </>
  );
}

function ResidencyTab({ model }: { model: ModelDetail }) {
  return (
    <section className="panel">
      <h2>Residency timeline</h2>
      {model.residencyLog.length === 0 ? (
        <p className="muted">No loads or evictions yet.</p>
      ) : (
        <table className="plain">
          <thead>
            <tr>
              <th>when</th>
              <th>what</th>
              <th>reason</th>
              <th className="num">took</th>
            </tr>
          </thead>
          <tbody>
            {model.residencyLog.map((e, i) => (
              <tr key={i}>
                <td>{formatTime(e.timeMs)}</td>
                <td>{e.kind}</td>
                <td>{e.reason}</td>
                <td className="num">{formatMs(e.durationMs)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function PolicyTab({ model, editable }: { model: ModelDetail; editable: boolean }) {
  const [draft, setDraft] = useState<Policy>(model.policy);
  const [reviewing, setReviewing] = useState(false);
  const update = usePolicyUpdate(model.name);
  const errors = validatePolicy(draft);
  const changes = diffPolicy(model.policy, draft);
  const field = (key: keyof Policy, label: string, input: React.ReactNode) => (
    <label className="field" key={key}>
      {label}
      {input}
      {errors[key] && <span className="error">{errors[key]}</span>}
    </label>
  );
  const num = (key: 'weight' | 'priority' | 'maxQueue') => (
    <input
      type="number"
      value={draft[key]}
      disabled={!editable}
      onChange={(e) => setDraft({ ...draft, [key]: e.target.valueAsNumber })}
      data-testid={`policy-${key}`}
    />
  );
  return (
    <section className="panel" data-testid="policy">
      <h2>Policy</h2>
      {!editable && <p className="muted">Read-only: changing a policy needs an operator or admin token.</p>}
      <div className="row" style={{ alignItems: 'flex-start' }}>
        {field(
          'pin',
          'Pin',
          <select
            value={draft.pin}
            disabled={!editable}
            onChange={(e) => setDraft({ ...draft, pin: e.target.value as Policy['pin'] })}
          >
            <option>unpinned</option>
            <option>system</option>
            <option>device</option>
          </select>,
        )}
        {field('weight', 'Weight (fair share)', num('weight'))}
        {field('priority', 'Priority', num('priority'))}
        {field('maxQueue', 'Queue cap', num('maxQueue'))}
        {field(
          'ttlSeconds',
          'Idle TTL (s, empty = none)',
          <input
            type="number"
            value={draft.ttlSeconds ?? ''}
            disabled={!editable}
            onChange={(e) => setDraft({ ...draft, ttlSeconds: e.target.value === '' ? null : e.target.valueAsNumber })}
          />,
        )}
      </div>
      {editable && (
        <div style={{ marginTop: 12 }}>
          {!reviewing ? (
            <button
              type="button"
              className="primary"
              disabled={changes.length === 0 || Object.keys(errors).length > 0}
              onClick={() => setReviewing(true)}
            >
              Review {changes.length} change{changes.length === 1 ? '' : 's'}
            </button>
          ) : (
            <div className="diff" data-testid="policy-diff">
              <ul>
                {changes.map((c) => (
                  <li key={c.key}>
                    <strong>{c.key}</strong>: <span className="old">{String(c.before)}</span> →{' '}
                    <span className="new">{String(c.after)}</span>
                  </li>
                ))}
              </ul>
              <div className="row">
                <button
                  type="button"
                  className="primary"
                  disabled={update.isPending}
                  onClick={() => update.mutate(draft, { onSuccess: () => setReviewing(false) })}
                >
                  Apply
                </button>
                <button type="button" onClick={() => setReviewing(false)}>
                  Back
                </button>
              </div>
              {update.error && <p className="error">{String(update.error.message)}</p>}
            </div>
          )}
        </div>
      )}
    </section>
  );
}

function TryIt({ model }: { model: ModelDetail }) {
  const settings = useSettings();
  const httpBase = settings.data?.endpoints?.http ?? `http://${location.hostname}:8000`;
  const grpcAddr = settings.data?.endpoints?.grpc ?? `${location.hostname}:8001`;
  return (
    <section className="panel">
      <h2>Try it</h2>
      <p className="muted">
        Send the model a zero-filled input shaped like its manifest, over KServe V2 HTTP or with Triton's client.
      </p>
      <h3>curl</h3>
      <pre data-testid="curl-snippet">{curlSnippet(httpBase, model)}</pre>
      <h3>tritonclient (Python, gRPC)</h3>
      <pre>{tritonclientSnippet(grpcAddr, model)}</pre>
    </section>
  );
}
