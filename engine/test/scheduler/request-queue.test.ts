import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { DeadlineHeap, type HeapItem } from '../../src/scheduler/deadline-heap.js';
import { RequestQueue } from '../../src/scheduler/request-queue.js';

suite('RequestQueue', () => {
  test('FIFO with O(1) removal anywhere and live row totals', () => {
    const q = new RequestQueue<string>();
    const a = q.push('a', 1);
    const b = q.push('b', 2);
    q.push('c', 3);
    assert.equal(q.length, 3);
    assert.equal(q.rows, 6);
    assert.equal(q.remove(b), true);
    assert.equal(q.remove(b), false, 'idempotent');
    assert.deepEqual(
      [...q].map((n) => n.value),
      ['a', 'c'],
    );
    assert.equal(q.rows, 4);
    assert.equal(q.front, a);
    assert.deepEqual(q.shift(5), ['a', 'c']);
    assert.equal(q.length, 0);
    assert.equal(q.rows, 0);
    assert.equal(q.front, null);
    q.push('d', 1);
    assert.deepEqual(q.shift(1), ['d']);
  });

  test('pushAhead: a FIFO prefix in front of ordinary requests, kept through removals', () => {
    const q = new RequestQueue<string>();
    q.push('a', 1);
    const x = q.pushAhead('x', 1);
    q.push('b', 1);
    const y = q.pushAhead('y', 1);
    assert.deepEqual(
      [...q].map((n) => n.value),
      ['x', 'y', 'a', 'b'],
    );
    q.remove(y);
    q.pushAhead('z', 2);
    assert.deepEqual(
      [...q].map((n) => n.value),
      ['x', 'z', 'a', 'b'],
    );
    q.remove(x);
    assert.deepEqual(q.shift(1), ['z']);
    q.pushAhead('w', 1);
    assert.deepEqual(
      [...q].map((n) => [n.value, n.ahead]),
      [
        ['w', true],
        ['a', false],
        ['b', false],
      ],
    );
    assert.equal(q.rows, 3);
    assert.deepEqual(q.shift(3), ['w', 'a', 'b']);
    q.pushAhead('v', 1);
    assert.equal(q.front?.value, 'v');
    q.push('c', 1);
    assert.deepEqual(q.shift(2), ['v', 'c']);
  });
});

suite('DeadlineHeap', () => {
  test('pops in deadline order and removes arbitrary items', () => {
    const h = new DeadlineHeap<HeapItem & { id: number }>();
    const items = [50, 10, 40, 20, 30, 60, 5].map((deadline, id) => ({ deadline, id, heapIndex: -1 }));
    for (const it of items) h.push(it);
    assert.equal(h.remove(items[3]!), true); // 20
    assert.equal(h.remove(items[3]!), false);
    assert.equal(h.remove(items[5]!), true); // 60
    const out: number[] = [];
    for (let it = h.pop(); it !== undefined; it = h.pop()) out.push(it.deadline);
    assert.deepEqual(out, [5, 10, 30, 40, 50]);
    assert.equal(h.size, 0);
  });

  test('random operations keep the heap order', () => {
    let seed = 7;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const h = new DeadlineHeap<HeapItem>();
    const live = new Set<HeapItem>();
    for (let i = 0; i < 2000; i++) {
      if (rnd() < 0.6 || live.size === 0) {
        const it = { deadline: Math.floor(rnd() * 1000), heapIndex: -1 };
        h.push(it);
        live.add(it);
      } else {
        const victim = [...live][Math.floor(rnd() * live.size)]!;
        h.remove(victim);
        live.delete(victim);
      }
      const min = Math.min(...[...live].map((x) => x.deadline));
      assert.equal(h.peek()?.deadline ?? Infinity, min);
    }
  });
});
