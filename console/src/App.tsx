import { lazy, Suspense, useState } from 'react';
import { tokenStore } from './api/token-store.js';
import { workerScope } from './api/worker-choice.js';
import { takeSetupTokenFromUrl } from './app/first-run.js';
import { Layout } from './app/Layout.js';
import { usePath } from './app/router.js';
import { useToken } from './app/session.js';
import { Overview } from './views/Overview.js';
import { Setup } from './views/Setup.js';

// The first screen ships in the entry chunk; the others load when opened.
const ModelList = lazy(() => import('./views/models/List.js').then((m) => ({ default: m.ModelList })));
const ModelDetails = lazy(() => import('./views/models/Details.js').then((m) => ({ default: m.ModelDetails })));
const MemoryMap = lazy(() => import('./views/MemoryMap.js').then((m) => ({ default: m.MemoryMap })));
const Queues = lazy(() => import('./views/queues/Queues.js').then((m) => ({ default: m.Queues })));
const Activity = lazy(() => import('./views/Activity.js').then((m) => ({ default: m.Activity })));
const Upload = lazy(() => import('./views/upload/Upload.js').then((m) => ({ default: m.Upload })));
const Placement = lazy(() => import('./views/placement/Placement.js').then((m) => ({ default: m.Placement })));
const Settings = lazy(() => import('./views/Settings.js').then((m) => ({ default: m.Settings })));

// Taken before the first render so the fragment is gone before anything can log or capture the URL.
const setupFromUrl =
  typeof location === 'undefined' ? null : takeSetupTokenFromUrl(location, (u) => history.replaceState(null, '', u));

export function App() {
  const token = useToken();
  usePath(); // the worker lives in the URL: render again when it changes
  const [setupToken] = useState(setupFromUrl);
  if (token === null) return <Setup initialSetupToken={setupToken} reason={tokenStore.reason() ?? undefined} />;
  return (
    <Layout>
      <Suspense fallback={<p className="muted">Loading…</p>}>
        {/* Another worker: the screen starts afresh on that worker's keys, with no state of the last. */}
        <Screen key={workerScope()} />
      </Suspense>
    </Layout>
  );
}

function Screen() {
  const path = usePath().split('?')[0]!;
  if (path === '/' || path === '/overview') return <Overview />;
  if (path === '/models') return <ModelList />;
  if (path.startsWith('/models/')) return <ModelDetails name={decodeURIComponent(path.slice('/models/'.length))} />;
  if (path === '/memory') return <MemoryMap />;
  if (path === '/queues') return <Queues />;
  if (path === '/activity') return <Activity />;
  if (path === '/upload') return <Upload />;
  if (path === '/settings') return <Settings />;
  if (path === '/placement') return <Placement />;
  return (
    <>
      <h1>Not found</h1>
      <p className="muted">No screen at {path}.</p>
    </>
  );
}
