import type { Bar } from './histogram.js';

/** A histogram as a table of bars: readable by screen readers, and narrow enough for a phone. */
export function Bars({ bars, caption, testId }: { bars: readonly Bar[]; caption: string; testId?: string }) {
  const max = Math.max(1, ...bars.map((b) => b.count));
  const total = bars.reduce((a, b) => a + b.count, 0);
  return (
    <table className="bars" data-testid={testId}>
      <caption className="visually-hidden">{caption}</caption>
      <tbody>
        {bars.map((b) => (
          <tr key={b.label}>
            <th scope="row">{b.label}</th>
            <td className="bar">
              <span style={{ width: `${(100 * b.count) / max}%` }} />
            </td>
            <td className="num">
              {b.count}
              <span className="muted"> {total > 0 ? `${((100 * b.count) / total).toFixed(0)}%` : ''}</span>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
