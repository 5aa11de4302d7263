// A min-heap of in-flight POP entries by deadline, indexed: every entry knows its slot, so
// an ack removes it and a change of invisible time moves it in O(log n), and the revive
// loop takes what is due from the top (RocketMQ's revive reads checkpoints in time order).

/** What the heap orders: a deadline, and the slot the heap keeps it in (-1 when out). */
export interface HeapItem {
  deadline: number;
  slot: number;
}

export class DeadlineHeap<T extends HeapItem> {
  readonly #items: T[] = [];

  get size(): number {
    return this.#items.length;
  }

  /** The earliest deadline, or undefined when empty. */
  peek(): T | undefined {
    return this.#items[0];
  }

  push(item: T): void {
    item.slot = this.#items.length;
    this.#items.push(item);
    this.#up(item.slot);
  }

  /** Takes `item` out; false when it was not in the heap. */
  remove(item: T): boolean {
    const i = item.slot;
    if (i < 0 || this.#items[i] !== item) return false;
    const last = this.#items.pop()!;
    item.slot = -1;
    if (last !== item) {
      this.#items[i] = last;
      last.slot = i;
      this.#down(i);
      this.#up(last.slot);
    }
    return true;
  }

  /** Moves `item` to a new deadline (in the heap or not). */
  update(item: T, deadline: number): void {
    this.remove(item);
    item.deadline = deadline;
    this.push(item);
  }

  /** Takes every item due at `now` or before, earliest first, up to `max`. */
  takeDue(now: number, max: number): T[] {
    const out: T[] = [];
    while (out.length < max && this.#items.length > 0 && this.#items[0].deadline <= now) {
      const top = this.#items[0];
      this.remove(top);
      out.push(top);
    }
    return out;
  }

  #up(i: number) {
    const a = this.#items;
    const item = a[i];
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (a[parent].deadline <= item.deadline) break;
      a[i] = a[parent];
      a[i].slot = i;
      i = parent;
    }
    a[i] = item;
    item.slot = i;
  }

  #down(i: number) {
    const a = this.#items;
    const n = a.length;
    const item = a[i];
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && a[child + 1].deadline < a[child].deadline) child++;
      if (a[child].deadline >= item.deadline) break;
      a[i] = a[child];
      a[i].slot = i;
      i = child;
    }
    a[i] = item;
    item.slot = i;
  }
}
