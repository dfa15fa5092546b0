import { useState, useSyncExternalStore, type FormEvent } from 'react';
import { LIVE_INTERVALS_MS, type LiveIntervalMs } from '../api/live-interval-store.js';
import type { CreatedToken, Scope } from '../api/types.js';
import { useCreateToken, useRevokeToken, useSettings, useTokens } from '../app/data.js';
import { canManageTokens } from '../app/permissions.js';
import { useSession } from '../app/session.js';
import { liveInterval } from '../app/stream-instance.js';
import { formatAgo, formatTime } from '../components/format.js';
import { QueryState } from '../components/QueryState.js';
import { storeSummary } from './store-summary.js';
import { tlsSummary } from './tls-summary.js';

export function Settings() {
  const session = useSession();
  const settings = useSettings(10_000);
  const admin = canManageTokens(session.data?.scope);
  return (
    <>
      <h1>Settings</h1>
      <section className="panel">
        <h2>Engine</h2>
        <QueryState isLoading={settings.isLoading} error={settings.error}>
          {settings.data && (
            <table className="plain">
              <tbody>
                <tr>
                  <th>Control mode</th>
                  <td>{settings.data.modelControlMode}</td>
                </tr>
                <tr>
                  <th>Scheduling discipline</th>
                  <td>{settings.data.discipline}</td>
                </tr>
                <tr>
                  <th>Operations state</th>
                  <td
                    className="breakable"
                    data-testid="settings-store"
                    data-reachable={settings.data.store?.reachable}
                  >
                    {storeSummary(settings.data.stateStore, settings.data.store)}
                  </td>
                </tr>
                <tr>
                  <th>Console connection</th>
                  <td data-testid="settings-tls">{tlsSummary(settings.data.tls)}</td>
                </tr>
                <tr>
                  <th>Live feed</th>
                  <td>
                    metrics every {settings.data.feed.metricsIntervalMs} ms, heartbeat every{' '}
                    {settings.data.feed.heartbeatMs} ms
                  </td>
                </tr>
              </tbody>
            </table>
          )}
        </QueryState>
      </section>
      <LiveUpdates />
      <section className="panel">
        <h2>Your token</h2>
        <p>
          {session.data?.name} · {session.data?.scope} · audited as <code>{session.data?.actor}</code>
        </p>
      </section>
      {admin ? <Tokens /> : <p className="muted panel">Tokens are managed with an admin token.</p>}
    </>
  );
}

const intervalLabel = (ms: LiveIntervalMs) => (ms === 1000 ? 'every second' : `every ${ms / 1000} s`);

/** This browser's live update interval: every tab of it follows. */
function LiveUpdates() {
  const ms = useSyncExternalStore(liveInterval.subscribe, liveInterval.get);
  return (
    <section className="panel">
      <h2>This browser</h2>
      <div className="row">
        <label className="field">
          Live updates
          <select
            value={ms}
            onChange={(e) => liveInterval.set(Number(e.target.value) as LiveIntervalMs)}
            data-testid="live-interval"
          >
            {LIVE_INTERVALS_MS.map((v) => (
              <option key={v} value={v}>
                {intervalLabel(v)}
              </option>
            ))}
          </select>
        </label>
      </div>
      <p className="muted">
        How often live numbers reach the screens of this browser, all its tabs. Less often costs the browser less CPU: a
        shown page spends almost all of it drawing updates. Charts redraw every 5 s whatever this says; a screen opened
        or a reconnect shows its data at once.
      </p>
    </section>
  );
}

function Tokens() {
  const tokens = useTokens(true);
  const create = useCreateToken();
  const revoke = useRevokeToken();
  const [name, setName] = useState('');
  const [scope, setScope] = useState<Scope>('viewer');
  const [created, setCreated] = useState<CreatedToken | null>(null);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate({ name: name.trim(), scope }, { onSuccess: (t) => (setCreated(t), setName('')) });
  };
  return (
    <section className="panel" data-testid="tokens">
      <h2>API tokens</h2>
      <form className="row" onSubmit={submit} style={{ alignItems: 'flex-end' }}>
        <label className="field">
          Name
          <input value={name} onChange={(e) => setName(e.target.value)} required data-testid="new-token-name" />
        </label>
        <label className="field">
          Scope
          <select value={scope} onChange={(e) => setScope(e.target.value as Scope)} data-testid="new-token-scope">
            <option>viewer</option>
            <option>operator</option>
            <option>admin</option>
          </select>
        </label>
        <button
          type="submit"
          className="primary"
          disabled={!name.trim() || create.isPending}
          data-testid="create-token"
        >
          Create token
        </button>
      </form>
      {create.error && <p className="error">{create.error.message}</p>}
      {created && (
        <div className="panel" role="alert" style={{ marginTop: 10 }}>
          <strong>{created.tokenInfo.name}</strong> ({created.tokenInfo.scope}): shown once, copy it now.
          <pre data-testid="created-token">{created.token}</pre>
          <button type="button" onClick={() => setCreated(null)}>
            Done
          </button>
        </div>
      )}
      <QueryState isLoading={tokens.isLoading} error={tokens.error}>
        <div className="scroll-x">
          <table className="plain" style={{ marginTop: 10 }}>
            <thead>
              <tr>
                <th>name</th>
                <th>scope</th>
                <th>created</th>
                <th>last used</th>
                <th>state</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {(tokens.data ?? []).map((t) => (
                <tr key={t.id}>
                  <td>{t.name}</td>
                  <td>{t.scope}</td>
                  <td>
                    {formatTime(t.createdAt)} <span className="muted">by {t.createdBy}</span>
                  </td>
                  <td>{formatAgo(t.lastUsedAt)}</td>
                  <td>{t.revokedAt ? 'revoked' : t.expiresAt && t.expiresAt < Date.now() ? 'expired' : 'active'}</td>
                  <td>
                    <button
                      type="button"
                      className="danger"
                      disabled={revoke.isPending || t.revokedAt !== null}
                      onClick={() => {
                        if (confirm(`Revoke ${t.name}? Clients using it stop working at once.`)) revoke.mutate(t.id);
                      }}
                    >
                      Revoke
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </QueryState>
    </section>
  );
}
