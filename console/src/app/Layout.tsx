import { useEffect, useRef, type ReactNode } from 'react';
import { tokenStore } from '../api/token-store.js';
import { currentWorker } from '../api/worker-choice.js';
import { ConnectionBanner } from '../components/ConnectionBanner.js';
import { WorkerPicker } from '../components/WorkerPicker.js';
import { Link, usePath } from './router.js';
import { useSession } from './session.js';
import { useControlMode } from './data.js';
import { usePlacements } from './fleet.js';
import { useTheme } from './theme.js';

const screens = [
  { to: '/', label: 'Overview' },
  { to: '/models', label: 'Models' },
  { to: '/memory', label: 'Memory map' },
  { to: '/queues', label: 'Queues' },
  { to: '/upload', label: 'Upload' },
  { to: '/activity', label: 'Activity' },
  { to: '/settings', label: 'Settings' },
] as const;

export function Layout({ children }: { children: ReactNode }) {
  const path = usePath().split('?')[0]!;
  const session = useSession();
  const controlMode = useControlMode();
  // Behind a gateway (the placements route answers): the fleet's screens and the worker picker.
  const fleetView = usePlacements(15_000).data;
  const fleet = fleetView?.fleet === true;
  const [theme, toggleTheme] = useTheme();
  const current = (to: string) => (to === '/' ? path === '/' : path === to || path.startsWith(to + '/'));
  const nav = useRef<HTMLElement>(null);
  // On a phone the screens are one row that scrolls sideways: keep the current one in view.
  useEffect(() => {
    nav.current?.querySelector('[aria-current="page"]')?.scrollIntoView({ block: 'nearest', inline: 'nearest' });
  }, [path]);
  return (
    <div className="shell">
      <header className="topbar">
        <Link to="/" className="brand">
          <img src="/icons/icon.svg" alt="" />
          hloserve
        </Link>
        <span className="spacer" />
        {fleet && fleetView && <WorkerPicker workers={fleetView.workers} named={currentWorker()} />}
        {session.data && (
          <span className="who muted" data-testid="who">
            {session.data.name} · <strong>{session.data.scope}</strong>
            {controlMode ? ` · ${controlMode} mode` : ''}
          </span>
        )}
        <button
          type="button"
          onClick={toggleTheme}
          aria-label={`switch to ${theme === 'dark' ? 'light' : 'dark'} theme`}
        >
          {theme === 'dark' ? '☀' : '☾'}
        </button>
        <button type="button" onClick={() => tokenStore.set(null)}>
          Sign out
        </button>
      </header>
      <nav className="nav" aria-label="screens" ref={nav}>
        {screens.map((s) => (
          <Link key={s.to} to={s.to} aria-current={current(s.to) ? 'page' : undefined}>
            {s.label}
          </Link>
        ))}
        {fleet && (
          <Link to="/placement" aria-current={current('/placement') ? 'page' : undefined}>
            Placement
          </Link>
        )}
      </nav>
      <main>
        <ConnectionBanner />
        <div style={{ height: 12 }} />
        {children}
      </main>
    </div>
  );
}
