import type { ReactNode } from 'react';
import { ApiError } from '../api/errors.js';

/** Loading and error states of a query, shown the same way everywhere. */
export function QueryState({
  isLoading,
  error,
  children,
}: {
  isLoading: boolean;
  error: unknown;
  children: ReactNode;
}) {
  if (error) {
    const msg = error instanceof ApiError ? `${error.message} (${error.code})` : String(error);
    return (
      <p className="error" role="alert">
        {msg}
      </p>
    );
  }
  if (isLoading) return <p className="muted">Loading…</p>;
  return <>{children}</>;
}
