// Unique message ids in RocketMQ's UNIQ_KEY form (reference/rocketmq.md §12):
//   IP (4 bytes) | short PID | int class-loader hash | int ms since the start of the month | short counter
// as 32 upper-case hex characters. We have no class loader: that int is a random per-process
// value, which serves the same purpose (two processes on one host and PID differ).

// Character positions in the id: the first 20 (IP, PID, random) are fixed for the process.
const ID_CHARS = 32;
const TIME_AT = 20; // 8 hex digits of the int ms since the start of the month
const COUNTER_AT = 28; // 4 hex digits of the short counter

export class MessageIdGenerator {
  readonly #nowMs: () => number;
  // Character codes of an id, reused: next() writes the time and counter digits in place
  // and makes the string in one step (no byte buffer, no string pieces per id).
  readonly #codes: number[] = new Array<number>(ID_CHARS).fill(48);
  #counter = 0;
  #monthStart = 0;
  #nextMonth = 0;

  constructor(options: { ip: Uint8Array; pid: number; nowMs: () => number; random: () => number }) {
    const head = new Uint8Array(10);
    const view = new DataView(head.buffer);
    head.set(options.ip.length === 4 ? options.ip : options.ip.subarray(12, 16), 0);
    view.setInt16(4, options.pid & 0xffff);
    view.setInt32(6, Math.floor(options.random() * 2 ** 32) | 0);
    for (let i = 0; i < head.length; i++) {
      this.#codes[2 * i] = hexCode(head[i] >> 4);
      this.#codes[2 * i + 1] = hexCode(head[i] & 15);
    }
    this.#nowMs = options.nowMs;
    this.#counter = Math.floor(options.random() * 65536);
  }

  /** The fixed head of every id (IP, PID, random): 20 hex characters. It says which
   * process made a message (the cluster router's find-by-id asks that group first). */
  get prefix(): string {
    return String.fromCharCode.apply(null, this.#codes.slice(0, TIME_AT));
  }

  next(): string {
    const now = this.#nowMs();
    if (now >= this.#nextMonth || now < this.#monthStart) {
      const d = new Date(now);
      this.#monthStart = new Date(d.getFullYear(), d.getMonth(), 1).getTime();
      this.#nextMonth = new Date(d.getFullYear(), d.getMonth() + 1, 1).getTime();
    }
    this.#counter = (this.#counter + 1) & 0xffff;
    const codes = this.#codes;
    // The int as Java writes it: two's complement, big-endian.
    putHex(codes, TIME_AT, (now - this.#monthStart) >>> 0, 8);
    putHex(codes, COUNTER_AT, this.#counter, 4);
    return String.fromCharCode.apply(null, codes);
  }
}

/** Writes the `digits` low hex digits of `value`, most significant first. */
function putHex(codes: number[], at: number, value: number, digits: number) {
  for (let i = at + digits - 1; i >= at; i--) {
    codes[i] = hexCode(value & 15);
    value >>>= 4;
  }
}

/** "0"-"9" are 48-57, "A"-"F" are 65-70. */
function hexCode(nibble: number): number {
  return nibble < 10 ? 48 + nibble : 55 + nibble;
}

export const MESSAGE_ID_PATTERN = /^[0-9A-F]{32}$/;
