import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { cannotMeetDeadline } from '../../src/scheduler/deadline-admission.js';
import { selectCandidate, type SelectionCandidate } from '../../src/scheduler/discipline.js';

const c = (name: string, frontArrival: number, minDeadline: number | null, priority = 0): SelectionCandidate => ({
  name,
  frontArrival,
  minDeadline,
  priority,
});

suite('selection', () => {
  test('fair: highest priority, ties to the older front request, then the smaller name', () => {
    assert.equal(selectCandidate('fair', [c('a', 0, null, 1), c('b', 0, null, 2)])?.name, 'b');
    assert.equal(selectCandidate('fair', [c('a', 5, null, 1), c('b', 3, null, 1)])?.name, 'b');
    assert.equal(selectCandidate('fair', [c('b', 3, null, 1), c('a', 3, null, 1)])?.name, 'a');
  });

  test('fifo: oldest front request, weights and deadlines ignored', () => {
    assert.equal(selectCandidate('fifo', [c('a', 5, 1, 9), c('b', 3, null, 0)])?.name, 'b');
    assert.equal(selectCandidate('fifo', [c('b', 3, null), c('a', 3, null)])?.name, 'a');
  });

  test('edf: earliest deadline; none sorts last; then oldest front; then name', () => {
    assert.equal(selectCandidate('edf', [c('a', 0, 900), c('b', 5, 500), c('c', 1, null)])?.name, 'b');
    assert.equal(selectCandidate('edf', [c('a', 2, null), c('b', 1, null)])?.name, 'b');
    assert.equal(selectCandidate('edf', [c('b', 1, 500), c('a', 1, 500)])?.name, 'a');
    assert.equal(selectCandidate('edf', [c('c', 0, null), c('a', 9, 10_000)])?.name, 'a');
  });

  test('nothing to choose from', () => {
    assert.equal(selectCandidate('fair', []), undefined);
  });
});

suite('deadline admission', () => {
  test('no deadline always runs', () => assert.equal(cannotMeetDeadline(null, 1e12, 1e6), false));
  test('margin 0 drops only what is already late', () => {
    assert.equal(cannotMeetDeadline(100, 99, 0), false);
    assert.equal(cannotMeetDeadline(100, 100, 0), true);
  });
  test('the cost estimate as margin sheds work that would finish late', () => {
    assert.equal(cannotMeetDeadline(100, 85, 10), false);
    assert.equal(cannotMeetDeadline(100, 95, 10), true);
  });
});
