// Unique message ids in RocketMQ's UNIQ_KEY form (reference/rocketmq.md §12):
//   IP (4 bytes) | short PID | int class-loader hash | int ms since the start of the month | short counter
// as 32 upper-case hex characters. We have no class loader: that int is a random per-process
// value, which serves the same purpose (two processes on one host and PID differ).

export class MessageIdGenerator {
  readonly #prefix: string;
  readonly #nowMs: () => number;
  #counter = 0;
  #monthStart = 0;
  #nextMonth = 0;

  constructor(options: { ip: Uint8Array; pid: number; nowMs: () => number; random: () => number }) {
    const head = new Uint8Array(10);
    const view = new DataView(head.buffer);
    head.set(options.ip.length === 4 ? options.ip : options.ip.subarray(12, 16), 0);
    view.setInt16(4, options.pid & 0xffff);
    view.setInt32(6, Math.floor(options.random() * 2 ** 32) | 0);
    this.#prefix = hex(head);
    this.#nowMs = options.nowMs;
    this.#counter = Math.floor(options.random() * 65536);
  }

  next(): string {
    const now = this.#nowMs();
    if (now >= this.#nextMonth || now < this.#monthStart) {
      const d = new Date(now);
      this.#monthStart = new Date(d.getFullYear(), d.getMonth(), 1).getTime();
      this.#nextMonth = new Date(d.getFullYear(), d.getMonth() + 1, 1).getTime();
    }
    const tail = new Uint8Array(6);
    const view = new DataView(tail.buffer);
    view.setInt32(0, (now - this.#monthStart) | 0);
    this.#counter = (this.#counter + 1) & 0xffff;
    view.setInt16(4, this.#counter);
    return this.#prefix + hex(tail);
  }
}

const HEX = "0123456789ABCDEF";

function hex(bytes: Uint8Array): string {
  let out = "";
  for (const b of bytes) out += HEX[b >> 4] + HEX[b & 15];
  return out;
}

export const MESSAGE_ID_PATTERN = /^[0-9A-F]{32}$/;
