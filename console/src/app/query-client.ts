import { MutationCache, QueryCache, QueryClient } from '@tanstack/react-query';
import { ApiError, shouldRetry } from '../api/errors.js';
import { tokenStore } from '../api/token-store.js';

/** A 401 means the token is gone (revoked, expired): back to sign-in, saying so. */
function onError(error: unknown): void {
  if (error instanceof ApiError && error.status === 401 && tokenStore.get() !== null)
    tokenStore.set(null, `The engine refused your token (${error.message}): sign in again.`);
}

export function createQueryClient(): QueryClient {
  return new QueryClient({
    queryCache: new QueryCache({ onError }),
    mutationCache: new MutationCache({ onError }),
    defaultOptions: {
      queries: {
        retry: shouldRetry,
        // Queries fed by the stream stay fresh through deltas; refetching would only race them.
        staleTime: 60_000,
        refetchOnWindowFocus: false,
      },
      mutations: { retry: false },
    },
  });
}
