import type { ReactNode } from 'react';
import type { Verdict } from '../app/permissions.js';

/** An action that, when refused, stays visible but disabled with its reason beside it. */
export function ActionButton(props: {
  verdict: Verdict;
  onClick: () => void;
  children: ReactNode;
  className?: string;
  busy?: boolean;
  testId?: string;
}) {
  const { verdict, onClick, children, className, busy, testId } = props;
  return (
    <span className="row" style={{ gap: 4 }}>
      <button
        type="button"
        className={className}
        disabled={!verdict.allowed || busy}
        onClick={onClick}
        title={verdict.whyNot ?? undefined}
        data-testid={testId}
        aria-describedby={verdict.whyNot && testId ? `${testId}-why` : undefined}
      >
        {busy ? '…' : children}
      </button>
      {verdict.whyNot && (
        <span className="whynot" id={testId ? `${testId}-why` : undefined}>
          {verdict.whyNot}
        </span>
      )}
    </span>
  );
}
