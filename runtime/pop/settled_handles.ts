// The receipt handles settled most recently (acked, or revived when their invisible time
// passed), so that a second ack is told RECEIPT_HANDLE_SETTLED or _EXPIRED, not _UNKNOWN.
// A handle is a message id, 32 hex digits: kept as four 32-bit words in a ring of
// `capacity` slots, found through an open-addressing table of ring positions (linear
// probing, deletion by backward shift). A few typed arrays, sized once (~30 bytes a
// handle, untouched pages cost nothing until used), rather than a Map of strings: 100,000
// handles took ~12 MiB of Bun's heap that way and, filling during the first minute of
// a busy broker, raised every later collection's threshold with it (bench/README.md,
// "Round 5 (branch mixedrss)").

export type SettledHow = "acked" | "revived";

/** Distinct group names kept before the names of groups no longer in the ring are dropped
 * (at least; twice the names still in use after a compaction). */
const GROUP_NAMES_MAX = 1024;
const HEX_DIGITS = 32;

export class SettledHandles {
  readonly capacity: number;
  /** Four words per ring slot: the handle. */
  #words: Uint32Array | undefined;
  /** Per ring slot: 0 = empty, else (group index + 1) * 2 + (revived ? 1 : 0). */
  #kinds: Int32Array | undefined;
  /** Ring slot + 1, 0 = empty; a power of two at least twice the capacity. */
  #table: Int32Array | undefined;
  #mask = 0;
  #next = 0;
  #size = 0;
  #groups: string[] = [];
  #groupIndex = new Map<string, number>();
  /** Names held before the next compaction. */
  #groupsCompactAt = GROUP_NAMES_MAX;
  readonly #key = new Uint32Array(4);

  constructor(capacity: number) {
    this.capacity = Math.max(1, Math.floor(capacity));
  }

  /** Handles remembered now. */
  get size(): number {
    return this.#size;
  }

  /** How `handle` was settled and by which group, if it is remembered. */
  get(handle: string): { group: string; how: SettledHow } | undefined {
    const at = this.#find(handle);
    if (at < 0) return undefined;
    const kind = this.#kinds![this.#table![at] - 1];
    return { group: this.#groups[(kind >> 1) - 1], how: kind & 1 ? "revived" : "acked" };
  }

  has(handle: string): boolean {
    return this.#find(handle) >= 0;
  }

  /** Remembers `handle` as settled by `group`; the oldest goes when the ring is full. A
   * handle that is not 32 hex digits (never one this broker gave out) is not kept. */
  set(handle: string, group: string, how: SettledHow): void {
    if (!this.#parse(handle)) return;
    this.#allocate();
    const words = this.#words!, kinds = this.#kinds!, table = this.#table!;
    const existing = this.#lookup();
    if (existing >= 0) this.#removeAt(existing);
    const slot = this.#next;
    this.#next = (slot + 1) % this.capacity;
    if (kinds[slot] !== 0) this.#removeAt(this.#slotAt(slot));
    const groupIndex = this.#groupOf(group);
    const key = this.#key;
    for (let i = 0; i < 4; i++) words[slot * 4 + i] = key[i];
    kinds[slot] = (groupIndex + 1) * 2 + (how === "revived" ? 1 : 0);
    let at = this.#home(key, 0);
    while (table[at] !== 0) at = (at + 1) & this.#mask;
    table[at] = slot + 1;
    this.#size++;
  }

  delete(handle: string): void {
    const at = this.#find(handle);
    if (at >= 0) this.#removeAt(at);
  }

  #allocate(): void {
    if (this.#table) return;
    let tableSize = 2;
    while (tableSize < this.capacity * 2) tableSize *= 2;
    this.#words = new Uint32Array(this.capacity * 4);
    this.#kinds = new Int32Array(this.capacity);
    this.#table = new Int32Array(tableSize);
    this.#mask = tableSize - 1;
  }

  /** Table index of `handle`, -1 if not remembered. */
  #find(handle: string): number {
    return this.#table && this.#parse(handle) ? this.#lookup() : -1;
  }

  /** Table index of the handle in #key, -1 if absent. */
  #lookup(): number {
    const table = this.#table!, words = this.#words!, key = this.#key;
    let at = this.#home(key, 0);
    for (let slot = table[at] - 1; slot >= 0; slot = table[at] - 1) {
      const w = slot * 4;
      if (
        words[w] === key[0] && words[w + 1] === key[1] && words[w + 2] === key[2] &&
        words[w + 3] === key[3]
      ) return at;
      at = (at + 1) & this.#mask;
    }
    return -1;
  }

  /** Table index of a filled ring slot. */
  #slotAt(slot: number): number {
    const table = this.#table!;
    let at = this.#home(this.#words!, slot * 4);
    while (table[at] !== slot + 1) at = (at + 1) & this.#mask;
    return at;
  }

  /** Empties table index `at` and its ring slot, then shifts later entries of the probe
   * run back so every entry stays reachable from its home index. */
  #removeAt(at: number): void {
    const table = this.#table!, mask = this.#mask;
    this.#kinds![table[at] - 1] = 0;
    table[at] = 0;
    this.#size--;
    let hole = at;
    for (let j = (at + 1) & mask; table[j] !== 0; j = (j + 1) & mask) {
      const home = this.#home(this.#words!, (table[j] - 1) * 4);
      // The entry at j may move to the hole if its home is not within (hole, j].
      const reachable = hole <= j ? home > hole && home <= j : home > hole || home <= j;
      if (!reachable) {
        table[hole] = table[j];
        table[j] = 0;
        hole = j;
      }
    }
  }

  #home(words: Uint32Array, w: number): number {
    let h = 0x9e3779b9;
    for (let i = 0; i < 4; i++) h = Math.imul(h ^ words[w + i], 0x85ebca6b) ^ (h >>> 15);
    h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
    return (h ^ (h >>> 16)) & this.#mask;
  }

  /** `handle` into #key; false unless it is 32 hex digits. */
  #parse(handle: string): boolean {
    if (handle.length !== HEX_DIGITS) return false;
    const key = this.#key;
    for (let i = 0; i < 4; i++) {
      let word = 0;
      for (let j = i * 8; j < i * 8 + 8; j++) {
        const c = handle.charCodeAt(j);
        const digit = c >= 48 && c <= 57
          ? c - 48
          : c >= 65 && c <= 70
          ? c - 55
          : c >= 97 && c <= 102
          ? c - 87
          : -1;
        if (digit < 0) return false;
        word = word * 16 + digit;
      }
      key[i] = word;
    }
    return true;
  }

  #groupOf(group: string): number {
    const known = this.#groupIndex.get(group);
    if (known !== undefined) return known;
    if (this.#groups.length >= this.#groupsCompactAt) this.#compactGroups();
    this.#groupIndex.set(group, this.#groups.length);
    this.#groups.push(group);
    return this.#groups.length - 1;
  }

  /** Keeps only the names of groups that still have a remembered handle (groups come and
   * go); renumbers the ring's entries. */
  #compactGroups(): void {
    const kinds = this.#kinds!, old = this.#groups;
    this.#groups = [];
    this.#groupIndex = new Map();
    for (let slot = 0; slot < kinds.length; slot++) {
      if (kinds[slot] === 0) continue;
      const name = old[(kinds[slot] >> 1) - 1];
      let index = this.#groupIndex.get(name);
      if (index === undefined) {
        index = this.#groups.length;
        this.#groupIndex.set(name, index);
        this.#groups.push(name);
      }
      kinds[slot] = (index + 1) * 2 + (kinds[slot] & 1);
    }
    this.#groupsCompactAt = Math.max(GROUP_NAMES_MAX, this.#groups.length * 2);
  }
}
