import { describe, expect, it } from 'vitest';
import type { ModelPlacementView, PlacementView } from '../../api/placement.js';
import { moveTargets, placementState, placementVerdict, weightLabel } from './placement-model.js';

const cell = (worker: string, placed: boolean, resident: boolean | null, weight: number | null = placed ? 1 : 0) => ({
  worker,
  placed,
  weight,
  ready: true,
  resident,
});
const model = (over: Partial<ModelPlacementView> = {}): ModelPlacementView => ({
  name: 'mlp',
  desiredReplicas: 1,
  placed: ['w0'],
  residentOn: ['w0'],
  pinned: false,
  utilisation: 0.2,
  cells: [cell('w0', true, true), cell('w1', false, false), cell('w2', false, false)],
  ...over,
});
const view: Pick<PlacementView, 'actions' | 'mode' | 'workers'> = {
  actions: true,
  mode: 'lpt_packing',
  workers: ['w0', 'w1', 'w2'].map((name) => ({ name, ready: true, console: true, outstanding: 0, computeLoad: 0 })),
};

describe('placement state: desired (placed) against actual (resident)', () => {
  it('resident exactly where placed is in place', () => expect(placementState(model())).toBe('in_place'));
  it('placed where not resident yet is warming', () =>
    expect(
      placementState(model({ cells: [cell('w0', true, true), cell('w1', true, false), cell('w2', false, false)] })),
    ).toBe('warming'));
  it('resident where no longer placed is lingering', () =>
    expect(
      placementState(model({ cells: [cell('w0', true, true), cell('w1', false, true), cell('w2', false, false)] })),
    ).toBe('lingering'));
  it('a placed worker whose metrics were unreadable is unknown', () =>
    expect(
      placementState(model({ cells: [cell('w0', true, null), cell('w1', false, false), cell('w2', false, false)] })),
    ).toBe('unknown'));
});

describe('placement actions: allowed, or why not', () => {
  it('a viewer may not act', () => {
    const v = placementVerdict('add_replica', model(), view, 'viewer');
    expect(v.allowed).toBe(false);
    expect(v.whyNot).toMatch(/operator/);
  });
  it('outside lpt_packing nothing applies', () => {
    const v = placementVerdict('add_replica', model(), { ...view, actions: false, mode: 'round_robin' }, 'admin');
    expect(v.whyNot).toMatch(/round_robin/);
  });
  it('replica bounds: at least one, at most one per worker', () => {
    expect(placementVerdict('remove_replica', model(), view, 'operator').allowed).toBe(false);
    expect(placementVerdict('add_replica', model(), view, 'operator').allowed).toBe(true);
    const everywhere = model({ desiredReplicas: 3, placed: ['w0', 'w1', 'w2'] });
    expect(placementVerdict('add_replica', everywhere, view, 'operator').allowed).toBe(false);
    expect(placementVerdict('move', everywhere, view, 'operator').allowed).toBe(false);
    expect(placementVerdict('remove_replica', everywhere, view, 'operator').allowed).toBe(true);
  });
  it('release only for a model moved by hand; moves go to workers it is not placed on', () => {
    expect(placementVerdict('release', model(), view, 'operator').allowed).toBe(false);
    expect(placementVerdict('release', model({ pinned: true }), view, 'operator').allowed).toBe(true);
    expect(moveTargets(model(), view)).toEqual(['w1', 'w2']);
  });
});

describe('replica weights', () => {
  it('a model on several workers shows each placed cell its share', () => {
    const m = model({ placed: ['w0', 'w1'], cells: [cell('w0', true, true, 0.93), cell('w1', true, true, 0.07)] });
    expect(m.cells.map((c) => weightLabel(m, c))).toEqual(['93 %', '7 %']);
  });
  it('one replica, an unplaced cell or an unweighted mode shows none', () => {
    const m = model();
    expect(m.cells.map((c) => weightLabel(m, c))).toEqual([null, null, null]);
    const rr = model({ placed: ['w0', 'w1'], cells: [cell('w0', true, true, null), cell('w1', true, true, null)] });
    expect(rr.cells.map((c) => weightLabel(rr, c))).toEqual([null, null]);
  });
});
