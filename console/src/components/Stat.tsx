/** One figure with its label, in a `.stats` row. */
export function Stat({ k, v, testId }: { k: string; v: string; testId?: string }) {
  return (
    <div className="stat">
      <div className="v" data-testid={testId}>
        {v}
      </div>
      <div className="k">{k}</div>
    </div>
  );
}
