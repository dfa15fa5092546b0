import { useQuery } from '@tanstack/react-query';
import { useSyncExternalStore } from 'react';
import { apiGet } from '../api/http.js';
import { sessionKeys } from '../api/keys.js';
import { routes } from '../api/routes.js';
import { tokenStore } from '../api/token-store.js';
import type { Scope, Session } from '../api/types.js';

export function useToken(): string | null {
  return useSyncExternalStore(tokenStore.subscribe, tokenStore.get);
}

export function useSession() {
  const token = useToken();
  return useQuery({
    queryKey: sessionKeys.me(token),
    queryFn: ({ signal }) => apiGet<Session>(routes.session, signal),
    enabled: token !== null,
    staleTime: Infinity,
  });
}

const rank: Record<Scope, number> = { viewer: 0, operator: 1, admin: 2 };

/** Whether a scope reaches a level: viewers read, operators act on models, admins manage tokens. */
export function allows(scope: Scope | undefined, needed: Scope): boolean {
  return scope !== undefined && rank[scope] >= rank[needed];
}
