import { useEffect, useMemo } from 'react';
import type { ModelView, Scope, TryTensor } from '../../api/types.js';
import { useModelIo, useTryIt } from '../../app/data.js';
import { tryVerdict } from '../../app/permissions.js';
import { ActionButton } from '../../components/ActionButton.js';
import { formatMs } from '../../components/format.js';
import { QueryState } from '../../components/QueryState.js';
import { curlSnippet, tritonclientSnippet } from './snippets.js';

const SOURCE_TEXT = {
  'client-reference.json': "the bundle's client reference (client-reference.json)",
  'reference.safetensors': "the bundle's reference input (reference.safetensors)",
  generated: 'a generated input of the right datatype and shape (the bundle has no reference)',
} as const;

/**
 * Sends the bundle's reference input through the engine (POST /models/:name/try, the same infer
 * path a KServe client's request takes) and shows what came back, then how to send it yourself.
 */
export function TryItTab({ model, scope }: { model: ModelView; scope: Scope | undefined }) {
  const io = useModelIo(model.name);
  const run = useTryIt(model.name);
  const verdict = tryVerdict(model, scope);
  const host = location.hostname;
  const result = run.data;
  const requestUrl = useObjectUrl(result?.requestJson ?? null);
  const inputs = io.data?.inputs ?? [];
  return (
    <>
      <section className="panel" data-testid="try-it">
        <h2>Try it</h2>
        <p className="muted">
          Sends {io.data ? SOURCE_TEXT[io.data.reference] : "the bundle's reference input"} to {model.name} through the
          engine, as a client would, and shows the answer.
        </p>
        {verdict.whyNot === 'needs an operator or admin token' ? (
          <p className="muted">Sending a request from the console needs an operator or admin token.</p>
        ) : (
          <ActionButton verdict={verdict} onClick={() => run.mutate()} busy={run.isPending} testId="action-try">
            Send the reference input
          </ActionButton>
        )}
        {run.error && (
          <p className="error" role="alert">
            {run.error.message}
          </p>
        )}
        {result && (
          <div data-testid="try-result">
            <p>
              Answered in <strong data-testid="try-latency">{formatMs(result.latencyMs)}</strong>
              {result.maxAbsDiff !== null && (
                <>
                  {' · '}
                  <span className={`verdict ${result.maxAbsDiff <= 1e-3 ? 'ok' : 'bad'}`} data-testid="try-verdict">
                    {result.maxAbsDiff <= 1e-3 ? 'matches' : 'differs from'} the reference output (max |diff|{' '}
                    {result.maxAbsDiff.toExponential(1)})
                  </span>
                </>
              )}
            </p>
            <h3>Input</h3>
            <TensorTable list={result.inputs} />
            <h3>Output</h3>
            <TensorTable list={result.outputs} testId="try-outputs" />
          </div>
        )}
      </section>
      <section className="panel">
        <h2>From a client</h2>
        <QueryState isLoading={io.isLoading} error={io.error}>
          <p className="muted">
            KServe V2 over HTTP (port 8000 by default) and Triton's Python client over gRPC (port 8001), with this
            model's tensors.
          </p>
          <h3>curl</h3>
          <pre data-testid="curl-snippet">
            {curlSnippet(`http://${host}:8000`, model.name, inputs, requestUrl !== null)}
          </pre>
          {requestUrl && (
            <p>
              <a href={requestUrl} download="request.json" data-testid="request-json">
                Download request.json
              </a>{' '}
              <span className="muted">(the request the console just sent, as KServe JSON)</span>
            </p>
          )}
          <h3>tritonclient (Python, gRPC)</h3>
          <pre data-testid="tritonclient-snippet">{tritonclientSnippet(`${host}:8001`, model.name, inputs)}</pre>
        </QueryState>
      </section>
    </>
  );
}

function TensorTable({ list, testId }: { list: readonly TryTensor[]; testId?: string }) {
  return (
    <div className="scroll-x">
      <table className="plain" data-testid={testId}>
        <thead>
          <tr>
            <th>name</th>
            <th>datatype</th>
            <th>shape</th>
            <th>first values</th>
          </tr>
        </thead>
        <tbody>
          {list.map((t) => (
            <tr key={t.name}>
              <td className="mono">{t.name}</td>
              <td>{t.datatype}</td>
              <td className="mono">[{t.shape.join(', ')}]</td>
              <td className="mono json">{preview(t)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function preview(t: TryTensor): string {
  const shown = t.preview
    .slice(0, 12)
    .map((v) => (typeof v === 'number' ? +v.toPrecision(4) : JSON.stringify(v)))
    .join(', ');
  return t.elements > 12 ? `${shown}, … (${t.elements} values)` : shown;
}

/** A blob URL for a text while it is shown, revoked when it changes or the panel goes. */
function useObjectUrl(text: string | null): string | null {
  const url = useMemo(
    () => (text === null ? null : URL.createObjectURL(new Blob([text], { type: 'application/json' }))),
    [text],
  );
  useEffect(
    () => () => {
      if (url) URL.revokeObjectURL(url);
    },
    [url],
  );
  return url;
}
