import { QueryClient } from '@tanstack/react-query';
import { shouldRetry } from '../api/errors.js';

export function createQueryClient(): QueryClient {
  return new QueryClient({
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
