import type { StoreHealth } from '../api/types.js';

const dialectName = { sqlite: 'SQLite', postgres: 'PostgreSQL' } as const;

/** One line for the Settings screen: which store, where, whether it answers and how fast, its migrations. */
export function storeSummary(dialect: 'sqlite' | 'postgres', store: StoreHealth | undefined): string {
  if (!store) return dialectName[dialect];
  const parts = [`${dialectName[store.dialect]} at ${store.location}`];
  if (!store.reachable) {
    parts.push(`not answering: ${store.error ?? 'no reason given'}`);
    return parts.join(' · ');
  }
  const ms = store.latencyMs ?? 0;
  parts.push(`reachable, ${ms < 1 ? ms.toFixed(2) : ms < 10 ? ms.toFixed(1) : ms.toFixed(0)} ms round trip`);
  const m = store.migrations;
  if (m) {
    const behind = m.applied < m.known ? `, ${m.known - m.applied} not applied` : '';
    parts.push(`migrations ${m.applied} of ${m.known}${m.latest ? ` (${m.latest})` : ''}${behind}`);
  }
  return parts.join(' · ');
}
