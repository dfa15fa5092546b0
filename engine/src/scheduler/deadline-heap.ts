/**
 * Queued requests that carry a deadline, earliest first, with O(log n) removal of any entry (each
 * item remembers its slot). EDF selection peeks the earliest deadline per model in O(1), and
 * expired requests are found without scanning the queue.
 */
export interface HeapItem {
  readonly deadline: number;
  /** Slot in the heap; -1 when not in one. Owned by DeadlineHeap. */
  heapIndex: number;
}

export class DeadlineHeap<T extends HeapItem> {
  readonly #items: T[] = [];

  get size(): number {
    return this.#items.length;
  }

  peek(): T | undefined {
    return this.#items[0];
  }

  push(item: T): void {
    item.heapIndex = this.#items.length;
    this.#items.push(item);
    this.#up(item.heapIndex);
  }

  pop(): T | undefined {
    const top = this.#items[0];
    if (top !== undefined) this.remove(top);
    return top;
  }

  remove(item: T): boolean {
    const i = item.heapIndex;
    if (i < 0 || this.#items[i] !== item) return false;
    const last = this.#items.pop()!;
    item.heapIndex = -1;
    if (last !== item) {
      this.#items[i] = last;
      last.heapIndex = i;
      this.#down(i);
      this.#up(last.heapIndex);
    }
    return true;
  }

  #swap(a: number, b: number): void {
    const x = this.#items[a]!;
    const y = this.#items[b]!;
    this.#items[a] = y;
    this.#items[b] = x;
    y.heapIndex = a;
    x.heapIndex = b;
  }

  #up(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.#items[parent]!.deadline <= this.#items[i]!.deadline) break;
      this.#swap(i, parent);
      i = parent;
    }
  }

  #down(i: number): void {
    const n = this.#items.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < n && this.#items[l]!.deadline < this.#items[m]!.deadline) m = l;
      if (r < n && this.#items[r]!.deadline < this.#items[m]!.deadline) m = r;
      if (m === i) break;
      this.#swap(i, m);
      i = m;
    }
  }
}
