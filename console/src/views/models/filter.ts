import type { ModelSummary } from '../../api/types.js';

export type SortKey =
  | 'name'
  | 'state'
  | 'resident'
  | 'residentBytes'
  | 'queueDepth'
  | 'inFlight'
  | 'requestsPerSecond'
  | 'p99Ms'
  | 'loads'
  | 'evictions'
  | 'lastUsedMs';

export interface TableQuery {
  readonly search: string;
  readonly state: 'all' | ModelSummary['state'];
  readonly residency: 'all' | 'device' | 'host' | 'none' | 'pinned';
  readonly sort: SortKey;
  readonly desc: boolean;
}

export const defaultQuery: TableQuery = { search: '', state: 'all', residency: 'all', sort: 'name', desc: false };

/** Filters and sorts the model list; pure, so it is measured and tested on its own. */
export function selectModels(models: readonly ModelSummary[], q: TableQuery): ModelSummary[] {
  const needle = q.search.trim().toLowerCase();
  const out = models.filter(
    (m) =>
      (needle === '' || m.name.toLowerCase().includes(needle) || m.version.toLowerCase().includes(needle)) &&
      (q.state === 'all' || m.state === q.state) &&
      (q.residency === 'all' || (q.residency === 'pinned' ? m.pin !== 'unpinned' : m.resident === q.residency)),
  );
  const dir = q.desc ? -1 : 1;
  const key = q.sort;
  out.sort((a, b) => {
    const av = a[key];
    const bv = b[key];
    if (av === bv) return a.name < b.name ? -1 : 1;
    if (av === null) return 1;
    if (bv === null) return -1;
    return (av < bv ? -1 : 1) * dir;
  });
  return out;
}
