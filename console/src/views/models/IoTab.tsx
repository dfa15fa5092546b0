import type { ModelView, TensorView } from '../../api/types.js';
import { useModelHistograms, useModelStats, useModelIo } from '../../app/data.js';
import { formatMs } from '../../components/format.js';
import { QueryState } from '../../components/QueryState.js';
import { describeTensor } from './snippets.js';

const PROVENANCE_KEYS = ['exporter', 'frontend', 'exported_at', 'git_commit', 'lowering_platform', 'num_parameters'];

/** The manifest: tensors with named axes and wire shapes; compiled sizes with their learned cost. */
export function IoTab({ model }: { model: ModelView }) {
  const io = useModelIo(model.name);
  const hist = useModelHistograms(model.name);
  const fresh = useModelStats(model.name);
  const s = fresh.data ?? model.stats;
  const runs = hist.data?.batchSizes ?? {};
  const d = io.data;
  return (
    <>
      <section className="panel" data-testid="model-io">
        <h2>Manifest and IO</h2>
        <QueryState isLoading={io.isLoading} error={io.error}>
          {d && (
            <>
              <dl className="facts">
                <dt>kind</dt>
                <dd>
                  {d.kind}
                  {d.hooks ? ' with hooks (clients see the hooks’ tensors)' : ''}
                  {d.metaCalls.length > 0 ? `, calls ${d.metaCalls.join(', ')}` : ''}
                </dd>
                {d.description && (
                  <>
                    <dt>description</dt>
                    <dd>{d.description}</dd>
                  </>
                )}
                <dt>try-it input</dt>
                <dd>{d.reference}</dd>
                {PROVENANCE_KEYS.filter((k) => d.provenance[k] !== undefined).map((k) => (
                  <Fact key={k} k={k.replace(/_/g, ' ')} v={String(d.provenance[k])} />
                ))}
              </dl>
              <h3>Inputs</h3>
              <Tensors list={d.inputs} testId="io-inputs" />
              <h3>Outputs</h3>
              <Tensors list={d.outputs} testId="io-outputs" />
              {d.hooks && d.executableInputs.length > 0 && (
                <>
                  <h3>Compiled module (behind the hooks)</h3>
                  <Tensors list={[...d.executableInputs, ...d.executableOutputs]} />
                </>
              )}
              {d.warnings.length > 0 && (
                <ul className="muted">
                  {d.warnings.map((w) => (
                    <li key={w}>{w}</li>
                  ))}
                </ul>
              )}
            </>
          )}
        </QueryState>
      </section>
      <section className="panel">
        <h2>Compiled sizes</h2>
        <div className="scroll-x">
          <table className="plain" data-testid="compiled-sizes">
            <thead>
              <tr>
                <th className="num">batch size</th>
                <th className="num">learned cost per call</th>
                <th className="num">per item</th>
                <th className="num">executions</th>
              </tr>
            </thead>
            <tbody>
              {model.batchSizes.map((b) => {
                const c = s?.costSeconds[String(b)];
                return (
                  <tr key={b}>
                    <td className="num">{b}</td>
                    <td className="num">{c === undefined ? 'not measured yet' : formatMs(c * 1000)}</td>
                    <td className="num">{c === undefined ? '–' : formatMs((c * 1000) / b)}</td>
                    <td className="num">{runs[String(b)] ?? 0}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
        <p className="muted">
          The cost is what the scheduler has measured per call at each size (a moving average); it decides how many
          requests to coalesce into one call.
        </p>
      </section>
    </>
  );
}

function Fact({ k, v }: { k: string; v: string }) {
  return (
    <>
      <dt>{k}</dt>
      <dd>{v}</dd>
    </>
  );
}

function Tensors({ list, testId }: { list: readonly TensorView[]; testId?: string }) {
  if (list.length === 0) return <p className="muted">None.</p>;
  return (
    <div className="scroll-x">
      <table className="plain" data-testid={testId}>
        <thead>
          <tr>
            <th>name</th>
            <th>datatype</th>
            <th>axes (manifest → wire)</th>
            <th>wire shape</th>
          </tr>
        </thead>
        <tbody>
          {list.map((t) => (
            <tr key={t.name} title={describeTensor(t)}>
              <td className="mono">{t.name}</td>
              <td>{t.datatype}</td>
              <td className="mono">
                {t.letters} → {t.wireLetters}
              </td>
              <td className="mono">
                [
                {t.wireShape
                  .map((d, i) => (i === t.wireBatchAxis ? 'N' : d < 0 ? `${t.wireLetters[i]!.toUpperCase()}?` : d))
                  .join(', ')}
                ]
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
