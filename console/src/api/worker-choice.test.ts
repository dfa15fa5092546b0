import { afterEach, describe, expect, test, vi } from 'vitest';
import { keepWorker } from '../app/router.js';
import { auditKeys, modelKeys, sessionKeys, settingsKeys } from './keys.js';
import { currentWorker, searchWithWorker, withWorker, workerFromSearch } from './worker-choice.js';

/** The page's URL, as the console reads it (Vitest runs in Node: no window). */
const at = (search: string) => vi.stubGlobal('location', { search, pathname: '/models' });

describe('the chosen worker, from the URL', () => {
  afterEach(() => vi.unstubAllGlobals());

  test('read from ?worker=, and a value that is no worker name is no choice', () => {
    expect(workerFromSearch('?worker=worker1')).toBe('worker1');
    expect(workerFromSearch('?x=1&worker=gpu-0.a_b')).toBe('gpu-0.a_b');
    expect(workerFromSearch('')).toBeNull();
    expect(workerFromSearch('?worker=')).toBeNull();
    expect(workerFromSearch('?worker=..%2Fetc')).toBeNull();
    expect(workerFromSearch(`?worker=${'w'.repeat(65)}`)).toBeNull();
    expect(workerFromSearch(`?worker=${'w'.repeat(64)}`)).toBe('w'.repeat(64));
    expect(currentWorker()).toBeNull(); // no location at all
  });

  test('every API path carries it; none named, the path is unchanged', () => {
    expect(withWorker('/api/v1/models', 'w1')).toBe('/api/v1/models?worker=w1');
    expect(withWorker('/api/v1/events?limit=1000&afterSeq=0', 'w1')).toBe(
      '/api/v1/events?limit=1000&afterSeq=0&worker=w1',
    );
    expect(withWorker('/api/v1/models', null)).toBe('/api/v1/models');
    at('?worker=w2');
    expect(withWorker('/api/v1/stream')).toBe('/api/v1/stream?worker=w2');
  });

  test('switching rewrites only the worker in the page query', () => {
    expect(searchWithWorker('?worker=w0&tab=io', 'w1')).toBe('?worker=w1&tab=io');
    expect(searchWithWorker('', 'w1')).toBe('?worker=w1');
    expect(searchWithWorker('?worker=w0', null)).toBe('');
  });

  test('links inside the console keep the worker unless they name one', () => {
    at('?worker=w1');
    expect(keepWorker('/queues')).toBe('/queues?worker=w1');
    expect(keepWorker('/models/a%20b')).toBe('/models/a%20b?worker=w1');
    expect(keepWorker('/memory?worker=w0')).toBe('/memory?worker=w0');
    at('');
    expect(keepWorker('/queues')).toBe('/queues');
  });

  test("query keys differ per worker, so one worker never shows another's data; prefixes still match", () => {
    at('?worker=w0');
    const w0 = [modelKeys.list(), modelKeys.detail('m'), auditKeys.list(), settingsKeys.all(), sessionKeys.me('t')];
    at('?worker=w1');
    const w1 = [modelKeys.list(), modelKeys.detail('m'), auditKeys.list(), settingsKeys.all(), sessionKeys.me('t')];
    at('');
    const dflt = modelKeys.list();
    for (let i = 0; i < w0.length; i++) {
      expect(JSON.stringify(w0[i])).not.toBe(JSON.stringify(w1[i]));
      expect(w0[i]!.at(-1)).toBe('w0');
      expect(w1[i]!.at(-1)).toBe('w1');
    }
    expect(dflt).toEqual(['models', 'list', '']);
    // invalidateQueries({queryKey: modelKeys.all}) reaches every worker's models.
    expect(w1[0]!.slice(0, modelKeys.all.length)).toEqual([...modelKeys.all]);
  });
});
