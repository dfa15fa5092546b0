import { whereResident } from '../../api/reducers.js';
import type { MetricValues, ModelView } from '../../api/types.js';

/** One row of the models table: the model flattened, with its latest 1 Hz sample. */
export interface ModelRow {
  readonly name: string;
  readonly version: string;
  readonly state: ModelView['state'];
  readonly where: ReturnType<typeof whereResident>;
  readonly floor: 'unpinned' | 'system' | 'device';
  readonly bytes: number | null;
  readonly queueDepth: number | null;
  readonly inFlight: number | null;
  readonly requestsPerSecond: number | null;
  readonly p99: number | null;
  readonly served: number | null;
  readonly loads: number | null;
  readonly evictions: number | null;
  /** When a dispatch last used the model's weights, epoch ms (null: not since load). */
  readonly lastUsed: number | null;
  readonly model: ModelView;
  /** Lower-cased name and version, what a search matches against. */
  readonly haystack: string;
}

export function toRow(m: ModelView, sample: MetricValues | undefined): ModelRow {
  return {
    name: m.name,
    version: m.version,
    state: m.state,
    where: whereResident(m.residency),
    floor: m.residency?.floor ?? m.policy?.residency ?? 'unpinned',
    bytes: m.residency?.weightBytes ?? null,
    queueDepth: m.queue?.depth ?? null,
    inFlight: m.queue?.inflight ?? null,
    requestsPerSecond: sample?.requestsPerSecond ?? null,
    p99: sample?.p99Ms ?? null,
    served: m.stats?.requestsServed ?? null,
    loads: m.residency?.loads ?? null,
    evictions: m.residency?.evictions ?? null,
    lastUsed: m.residency?.lastUsedAt ?? null,
    model: m,
    haystack: `${m.name}\u0000${m.version}`.toLowerCase(),
  };
}

/** What each model's row was made from: a model unchanged since keeps its row object. */
export type RowCache = WeakMap<ModelView, { readonly sample: MetricValues | undefined; readonly row: ModelRow }>;

/**
 * The table's rows. A feed update makes new objects only for the models it changed (the cache's
 * folds keep the others), so their rows are reused: the rows on screen that did not change are the
 * same objects, and their memoised components skip the render.
 */
export function toRows(
  models: readonly ModelView[],
  latest: ReadonlyMap<string, MetricValues> | undefined,
  cache: RowCache,
): ModelRow[] {
  return models.map((m) => {
    const sample = latest?.get(m.name);
    const made = cache.get(m);
    if (made !== undefined && made.sample === sample) return made.row;
    const row = toRow(m, sample);
    cache.set(m, { sample, row });
    return row;
  });
}

export type SortKey = Exclude<keyof ModelRow, 'model' | 'haystack'>;

export interface TableQuery {
  readonly search: string;
  readonly state: 'all' | ModelView['state'];
  readonly residency: 'all' | 'device' | 'host' | 'none' | 'pinned';
  readonly sort: SortKey;
  readonly desc: boolean;
}

export const defaultQuery: TableQuery = { search: '', state: 'all', residency: 'all', sort: 'name', desc: false };

/** Sorts the rows (a new array); missing values last whichever the direction. */
export function sortRows(rows: readonly ModelRow[], key: SortKey, desc: boolean): ModelRow[] {
  const dir = desc ? -1 : 1;
  return [...rows].sort((a, b) => {
    const av = a[key];
    const bv = b[key];
    if (av === bv) return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
    if (av === null) return 1;
    if (bv === null) return -1;
    return (av < bv ? -1 : 1) * dir;
  });
}

/** Filters rows already in order (the order is kept), so typing a search never re-sorts. */
export function filterRows(
  sorted: readonly ModelRow[],
  q: Pick<TableQuery, 'search' | 'state' | 'residency'>,
): readonly ModelRow[] {
  const needle = q.search.trim().toLowerCase();
  if (needle === '' && q.state === 'all' && q.residency === 'all') return sorted;
  return sorted.filter(
    (r) =>
      (needle === '' || r.haystack.includes(needle)) &&
      (q.state === 'all' || r.state === q.state) &&
      (q.residency === 'all' || (q.residency === 'pinned' ? r.floor === 'device' : r.where === q.residency)),
  );
}

/** Filters and sorts the rows; pure, so it is measured and tested on its own. */
export function selectRows(rows: readonly ModelRow[], q: TableQuery): readonly ModelRow[] {
  return filterRows(sortRows(rows, q.sort, q.desc), q);
}
