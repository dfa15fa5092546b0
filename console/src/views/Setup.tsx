import { useState, type FormEvent } from 'react';
import { ApiError } from '../api/errors.js';
import { apiRequest } from '../api/http.js';
import { routes } from '../api/routes.js';
import { tokenStore } from '../api/token-store.js';
import type { CreatedToken } from '../api/types.js';

/**
 * First run: exchange the one-time setup token (from the engine's log, its 0600 file, or a
 * `#setup=` link) for an admin token. Later: sign in with any token.
 */
export function Setup({ initialSetupToken, reason }: { initialSetupToken: string | null; reason?: string }) {
  const [mode, setMode] = useState<'setup' | 'token'>(initialSetupToken || !reason ? 'setup' : 'token');
  const [value, setValue] = useState(initialSetupToken ?? '');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [created, setCreated] = useState<CreatedToken | null>(null);

  async function submit(e: FormEvent) {
    e.preventDefault();
    setError(null);
    setBusy(true);
    try {
      if (mode === 'setup') {
        const res = await apiRequest<CreatedToken>(routes.setup, {
          method: 'POST',
          body: { setupToken: value.trim() },
          token: null,
        });
        setCreated(res.data);
      } else {
        await apiRequest(routes.session, { token: value.trim() });
        tokenStore.set(value.trim());
      }
    } catch (err) {
      setError(err instanceof ApiError ? describe(err, mode) : String(err));
    } finally {
      setBusy(false);
    }
  }

  if (created) {
    return (
      <div className="center panel" data-testid="setup-done">
        <h1>Admin token created</h1>
        <p>
          This is the only time it is shown. Keep it in a password manager: it can mint and revoke every other token.
        </p>
        <pre data-testid="admin-token">{created.token}</pre>
        <div className="row">
          <button type="button" onClick={() => void navigator.clipboard?.writeText(created.token)}>
            Copy
          </button>
          <button
            type="button"
            className="primary"
            onClick={() => tokenStore.set(created.token)}
            data-testid="continue"
          >
            Continue to the console
          </button>
        </div>
      </div>
    );
  }

  return (
    <form className="center panel" onSubmit={(e) => void submit(e)} data-testid="setup">
      <p className="brand">
        <img src="/icons/icon.svg" alt="" width={28} height={28} /> hloserve
      </p>
      <h1>{mode === 'setup' ? 'Set up hloserve' : 'Sign in'}</h1>
      {reason && <p className="error">{reason}</p>}
      {mode === 'setup' ? (
        <p>
          Paste the one-time setup token. The engine prints it at first start and writes it to <code>setup-token</code>{' '}
          in its cache directory (readable by its user only). It works once and expires.
        </p>
      ) : (
        <p>Paste an API token (viewer, operator or admin).</p>
      )}
      <label className="field">
        {mode === 'setup' ? 'Setup token' : 'API token'}
        <input
          autoFocus
          value={value}
          onChange={(e) => setValue(e.target.value)}
          autoComplete="off"
          spellCheck={false}
          data-testid="token-input"
          type="password"
        />
      </label>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <div className="row" style={{ marginTop: 12 }}>
        <button className="primary" type="submit" disabled={busy || value.trim() === ''} data-testid="submit">
          {mode === 'setup' ? 'Create admin token' : 'Sign in'}
        </button>
        <button type="button" onClick={() => setMode(mode === 'setup' ? 'token' : 'setup')}>
          {mode === 'setup' ? 'I have an API token' : 'I have a setup token'}
        </button>
      </div>
    </form>
  );
}

function describe(err: ApiError, mode: 'setup' | 'token'): string {
  if (err.status === 0) return err.message;
  if (mode === 'setup' && (err.status === 401 || err.status === 403 || err.status === 409 || err.status === 410))
    return `The setup token was not accepted: ${err.message}. While no admin token exists, restarting the engine prints a new one.`;
  if (err.isAuth) return 'That token is not valid or has been revoked.';
  return `${err.message} (${err.code})`;
}
