/** A small path router: the console has a handful of screens and needs no routing library. */
import { useSyncExternalStore, type AnchorHTMLAttributes, type MouseEvent } from 'react';
import { WORKER_PARAM, withWorker } from '../api/worker-choice.js';

const listeners = new Set<() => void>();
function notify(): void {
  for (const l of listeners) l();
}
if (typeof window !== 'undefined') window.addEventListener('popstate', notify);

/** Runs on every change of the page's URL (navigate, back, forward); returns its removal. */
export function onLocationChange(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/**
 * A link inside the console keeps the worker being watched (behind a gateway) unless it names one:
 * moving between screens never silently switches to another worker's data.
 */
export function keepWorker(to: string): string {
  return new URLSearchParams(to.split('?')[1] ?? '').has(WORKER_PARAM) ? to : withWorker(to);
}

export function navigate(to: string, opts: { replace?: boolean } = {}): void {
  to = keepWorker(to);
  if (opts.replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  notify();
}

export function usePath(): string {
  return useSyncExternalStore(
    (l) => {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    () => location.pathname + location.search,
  );
}

export function Link(props: AnchorHTMLAttributes<HTMLAnchorElement> & { to: string }) {
  const { to, onClick, ...rest } = props;
  const click = (e: MouseEvent<HTMLAnchorElement>) => {
    onClick?.(e);
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(to);
  };
  return <a href={keepWorker(to)} onClick={click} {...rest} />;
}
