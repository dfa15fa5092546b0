/**
 * A model's FIFO queue: a doubly linked list so that a request cancelled or expired anywhere in
 * the queue leaves in O(1), while the dispatch loop reads the front and a short prefix. The total
 * rows are kept up to date so that batching-window checks never walk the queue. Requests pushed
 * "ahead" (a meta model's sub-calls: a started pipeline finishes before fresh work starts) form a
 * FIFO prefix of their own in front of every other request.
 */
export class QueueNode<T> {
  prev: QueueNode<T> | null = null;
  next: QueueNode<T> | null = null;
  /** The queue holding this node, null once removed (removal is idempotent). */
  owner: RequestQueue<T> | null = null;
  constructor(
    readonly value: T,
    readonly rows: number,
    /** Queued ahead of ordinary requests (pushAhead). */
    readonly ahead = false,
  ) {}
}

export class RequestQueue<T> {
  #head: QueueNode<T> | null = null;
  #tail: QueueNode<T> | null = null;
  /** The last node of the ahead prefix, null when it is empty. */
  #lastAhead: QueueNode<T> | null = null;
  #length = 0;
  #rows = 0;

  get length(): number {
    return this.#length;
  }

  /** Sum of rows over every queued request. */
  get rows(): number {
    return this.#rows;
  }

  get front(): QueueNode<T> | null {
    return this.#head;
  }

  push(value: T, rows: number): QueueNode<T> {
    const node = new QueueNode(value, rows);
    node.owner = this;
    node.prev = this.#tail;
    if (this.#tail === null) this.#head = node;
    else this.#tail.next = node;
    this.#tail = node;
    this.#length++;
    this.#rows += rows;
    return node;
  }

  /** Queues `value` behind every earlier pushAhead and in front of every ordinary request. */
  pushAhead(value: T, rows: number): QueueNode<T> {
    const node = new QueueNode(value, rows, true);
    node.owner = this;
    const before = this.#lastAhead;
    node.prev = before;
    node.next = before === null ? this.#head : before.next;
    if (before === null) this.#head = node;
    else before.next = node;
    if (node.next === null) this.#tail = node;
    else node.next.prev = node;
    this.#lastAhead = node;
    this.#length++;
    this.#rows += rows;
    return node;
  }

  /** Unlinks `node`; false when it was not (or no longer) in this queue. */
  remove(node: QueueNode<T>): boolean {
    if (node.owner !== this) return false;
    // Ahead nodes are a prefix, so the one before the last is ahead too (or there is none).
    if (node === this.#lastAhead) this.#lastAhead = node.prev;
    if (node.prev === null) this.#head = node.next;
    else node.prev.next = node.next;
    if (node.next === null) this.#tail = node.prev;
    else node.next.prev = node.prev;
    node.prev = node.next = null;
    node.owner = null;
    this.#length--;
    this.#rows -= node.rows;
    return true;
  }

  /** Removes and returns the first `count` values in order. */
  shift(count: number): T[] {
    const out: T[] = [];
    while (out.length < count && this.#head !== null) {
      const node = this.#head;
      this.remove(node);
      out.push(node.value);
    }
    return out;
  }

  *[Symbol.iterator](): IterableIterator<QueueNode<T>> {
    for (let n = this.#head; n !== null; n = n.next) yield n;
  }
}
