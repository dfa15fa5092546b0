import { useState } from 'react';
import type { BundleVersionView, ModelView, Scope } from '../../api/types.js';
import { useModelVersions, useRollback } from '../../app/data.js';
import { canOperate, rollbackVerdict } from '../../app/permissions.js';
import { ActionButton } from '../../components/ActionButton.js';
import { formatBytes, formatTime } from '../../components/format.js';
import { QueryState } from '../../components/QueryState.js';

/**
 * The model's folder in the repository and the previous versions an upload (or a rollback) kept
 * beside it; an operator puts one back, after confirming, and the replaced one is kept in turn.
 */
export function VersionsTab(props: { model: ModelView; scope: Scope | undefined; controlMode: string | undefined }) {
  const { model, scope, controlMode } = props;
  const versions = useModelVersions(model.name);
  const rollback = useRollback(model.name);
  const [confirming, setConfirming] = useState<BundleVersionView | null>(null);
  const operate = canOperate(scope);
  const verdict = rollbackVerdict(scope, controlMode, rollback.isPending);
  const list = versions.data ?? [];
  return (
    <section className="panel" data-testid="versions">
      <h2>Versions</h2>
      <p className="muted">
        Clients address version 1 of every model; these are the bundle folders behind it. An upload keeps the folder it
        replaces; rolling back puts a kept one back and loads it.
      </p>
      <QueryState isLoading={versions.isLoading} error={versions.error}>
        {list.length <= 1 && <p className="muted">No previous versions are kept for this model.</p>}
        <div className="scroll-x">
          <table className="plain">
            <thead>
              <tr>
                <th>version</th>
                <th>when</th>
                <th>manifest</th>
                <th className="num">files</th>
                <th className="num">bytes</th>
                <th>compiled sizes</th>
                {operate && <th />}
              </tr>
            </thead>
            <tbody>
              {list.map((v) => (
                <tr key={v.id} data-testid="version-row">
                  <td>{v.current ? <strong>serving</strong> : <span className="mono">{v.id}</span>}</td>
                  <td>
                    {v.current ? 'installed' : 'replaced'} {formatTime(v.at)}
                  </td>
                  <td>
                    <span className="mono">{v.manifestSha256}</span>
                    {v.description && <div className="muted">{v.description}</div>}
                  </td>
                  <td className="num">{v.files}</td>
                  <td className="num">{formatBytes(v.bytes)}</td>
                  <td>{v.compiledBatchSizes.join(', ')}</td>
                  {operate && (
                    <td>
                      {!v.current && (
                        <ActionButton verdict={verdict} onClick={() => setConfirming(v)} testId="action-rollback">
                          Roll back to this
                        </ActionButton>
                      )}
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </QueryState>
      {confirming && (
        <div className="panel diff" role="dialog" aria-label="confirm rollback" data-testid="rollback-confirm">
          <p>
            Put back the version of <strong>{model.name}</strong> replaced at {formatTime(confirming.at)} (manifest{' '}
            <span className="mono">{confirming.manifestSha256}</span>)? The serving version is kept and can be put back
            the same way. Requests in flight finish on the version they started on.
          </p>
          <div className="row">
            <button
              type="button"
              className="danger"
              disabled={rollback.isPending}
              onClick={() => rollback.mutate(confirming.id, { onSuccess: () => setConfirming(null) })}
              data-testid="rollback-apply"
            >
              {rollback.isPending ? 'Rolling back…' : 'Roll back (audited)'}
            </button>
            <button type="button" onClick={() => setConfirming(null)} autoFocus>
              Cancel
            </button>
          </div>
        </div>
      )}
      {rollback.error && (
        <p className="error" role="alert">
          {rollback.error.message}
        </p>
      )}
    </section>
  );
}
