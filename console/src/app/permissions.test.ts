import { describe, expect, test } from 'vitest';
import type { ModelView } from '../api/types.js';
import { takeSetupTokenFromUrl } from './first-run.js';
import { budgetVerdict, modelActionVerdict, rollbackVerdict, tryVerdict } from './permissions.js';

const residency = (floor: 'unpinned' | 'system' | 'device') => ({
  floor,
  weightBytes: 1,
  deviceResident: true,
  hostResident: true,
  loading: false,
  leases: 0,
  loads: 1,
  evictions: 0,
  lastUsedAt: null,
});
const ready: Pick<ModelView, 'state' | 'residency' | 'policy' | 'drain'> = {
  state: 'READY',
  residency: residency('unpinned'),
  policy: null,
  drain: null,
};

describe('modelActionVerdict', () => {
  test('a viewer may do nothing and is told why', () => {
    expect(modelActionVerdict('pin', ready, 'viewer', 'explicit')).toEqual({
      allowed: false,
      whyNot: 'needs an operator or admin token',
    });
  });
  test('static mode refuses load and unload but not pinning', () => {
    expect(modelActionVerdict('unload', ready, 'admin', 'static').whyNot).toMatch(/static mode/);
    expect(modelActionVerdict('pin', ready, 'admin', 'static').allowed).toBe(true);
  });
  test('the model state and its floor decide the rest', () => {
    expect(modelActionVerdict('load', ready, 'operator', 'explicit').whyNot).toBe('already loaded');
    expect(
      modelActionVerdict('unload', { ...ready, residency: residency('device') }, 'operator', 'explicit').whyNot,
    ).toBe('pinned on the device: unpin it first');
    expect(modelActionVerdict('unpin', ready, 'operator', 'explicit').whyNot).toBe('not pinned');
    expect(modelActionVerdict('load', { ...ready, state: 'LOADING' }, 'operator', 'explicit').whyNot).toBe(
      'loading now',
    );
    expect(modelActionVerdict('load', { ...ready, state: 'UNAVAILABLE' }, 'operator', 'explicit').allowed).toBe(true);
  });
  test('a drained model offers resume instead of drain', () => {
    const drained = { ...ready, drain: { since: 1, pending: 0, idle: true } };
    expect(modelActionVerdict('resume', ready, 'operator', 'explicit').whyNot).toBe('not drained');
    expect(modelActionVerdict('drain', ready, 'operator', 'explicit').allowed).toBe(true);
    expect(modelActionVerdict('drain', drained, 'operator', 'explicit').whyNot).toBe('already drained');
    expect(modelActionVerdict('resume', drained, 'operator', 'explicit').allowed).toBe(true);
    expect(modelActionVerdict('resume', drained, 'viewer', 'explicit').allowed).toBe(false);
  });
});

describe('takeSetupTokenFromUrl', () => {
  test('takes the token and strips the fragment at once', () => {
    const replaced: string[] = [];
    const t = takeSetupTokenFromUrl({ hash: '#setup=abc%2Fd', pathname: '/', search: '?x=1' }, (u) => replaced.push(u));
    expect(t).toBe('abc/d');
    expect(replaced).toEqual(['/?x=1']);
  });
  test('leaves other fragments alone', () => {
    const replaced: string[] = [];
    expect(takeSetupTokenFromUrl({ hash: '#models', pathname: '/', search: '' }, (u) => replaced.push(u))).toBeNull();
    expect(replaced).toEqual([]);
  });
});

describe('rollback and try-it verdicts', () => {
  test('rollback: operators outside static mode, one at a time', () => {
    expect(rollbackVerdict('viewer', 'dynamic', false)).toEqual({
      allowed: false,
      whyNot: 'needs an operator or admin token',
    });
    expect(rollbackVerdict('operator', 'static', false).whyNot).toMatch(/static mode/);
    expect(rollbackVerdict('operator', 'dynamic', true).whyNot).toBe('a rollback is running');
    expect(rollbackVerdict('admin', 'explicit', false)).toEqual({ allowed: true, whyNot: null });
  });

  test('try it: operators, on a ready model', () => {
    expect(tryVerdict({ state: 'READY' }, 'viewer').allowed).toBe(false);
    expect(tryVerdict({ state: 'LOADING' }, 'operator').whyNot).toBe('the model is loading, not ready');
    expect(tryVerdict({ state: 'READY' }, 'operator').allowed).toBe(true);
  });
});

describe('budget verdict', () => {
  test('admins only, a whole number of bytes, and only a change', () => {
    expect(budgetVerdict('operator', 100, 50).whyNot).toMatch(/needs an admin token/);
    expect(budgetVerdict('admin', 100, null).allowed).toBe(false);
    expect(budgetVerdict('admin', 100, -1).allowed).toBe(false);
    expect(budgetVerdict('admin', 100, 1.5).allowed).toBe(false);
    expect(budgetVerdict('admin', 100, 100).whyNot).toBe('that is the budget now');
    expect(budgetVerdict('admin', null, 0)).toEqual({ allowed: true, whyNot: null });
  });
});
