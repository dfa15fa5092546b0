/**
 * Behind a gateway: which worker's screens are shown. A native select (keyboard and screen
 * readers as the platform gives them); the choice goes into the URL (?worker=NAME), so the tab
 * keeps it on reload and a link carries it. Workers that cannot answer are listed, disabled, with
 * why; a name in the URL that the fleet does not have is shown as such so the operator sees it.
 */
import type { WorkerPlacementView } from '../api/placement.js';
import { searchWithWorker } from '../api/worker-choice.js';
import { navigate } from '../app/router.js';

export function WorkerPicker({ workers, named }: { workers: readonly WorkerPlacementView[]; named: string | null }) {
  const fallback = workers.find((w) => w.ready && w.console)?.name ?? '';
  const value = named ?? fallback;
  const unknown = named !== null && !workers.some((w) => w.name === named);
  return (
    <label className="worker-picker">
      <span>Worker</span>
      <select
        data-testid="worker-picker"
        value={value}
        onChange={(e) => navigate(location.pathname + searchWithWorker(location.search, e.target.value))}
      >
        {unknown && (
          <option value={named} disabled>
            {named} (not in this fleet)
          </option>
        )}
        {workers.map((w) => (
          <option key={w.name} value={w.name} disabled={!w.console || !w.ready}>
            {w.name}
            {!w.console ? ' (no console)' : !w.ready ? ' (not ready)' : ''}
          </option>
        ))}
      </select>
    </label>
  );
}
