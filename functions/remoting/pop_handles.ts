// POP receipts for remoting clients. A 5.x remoting client never sees our receipt handle: it
// rebuilds RocketMQ's extraInfo ("ckOffset popTime invisibleTime reviveQid retry brokerName
// queueId queueOffset") from the POP answer's header and each record, and echoes that string
// on ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME. Our handles do not fit in those numeric
// fields, so the broker remembers them: a bounded table keyed by what the client echoes
// (group, popTime, retry flag, queueId, queueOffset). popTime is unique per POP answer on
// this broker (a monotonic clock), so the key is unique for as long as the entry lives.
// Entries go when acked, when their invisible time has long passed, or, past `max`, oldest
// first; a forgotten receipt answers NO_MESSAGE and its message comes back after its
// invisible time, as an expired RocketMQ checkpoint does. Pure.
import { BrokerError } from "../../runtime/protocol/errors.ts";

/** The parts of extraInfo the table is keyed by. */
export interface PopReceiptKey {
  popTime: number;
  retry: boolean;
  queueId: number;
  queueOffset: number;
}

interface Entry {
  handle: string;
  /** When the table may drop it: its invisible time, plus grace for a late ACK. */
  dropAfter: number;
}

/** Kept past the invisible time: the core still answers a late ACK (settled or expired). */
const GRACE_MS = 60_000;

export class PopHandles {
  readonly #entries = new Map<string, Entry>();
  #lastPopTime = 0;

  constructor(private readonly max: number, private readonly nowMs: () => number) {}

  get size(): number {
    return this.#entries.size;
  }

  /** A popTime no earlier answer of this broker used. */
  nextPopTime(): number {
    this.#lastPopTime = Math.max(this.nowMs(), this.#lastPopTime + 1);
    return this.#lastPopTime;
  }

  remember(group: string, key: PopReceiptKey, handle: string, invisibleUntil: number): void {
    const now = this.nowMs();
    for (const [k, e] of this.#entries) { // oldest first: drop the long expired
      if (e.dropAfter > now && this.#entries.size < this.max) break;
      this.#entries.delete(k);
    }
    this.#entries.set(keyOf(group, key), { handle, dropAfter: invisibleUntil + GRACE_MS });
  }

  /** The handle for what a client echoed; NO_MESSAGE-style error when it is not known. */
  take(group: string, key: PopReceiptKey, keep: boolean): string {
    const k = keyOf(group, key);
    const e = this.#entries.get(k);
    if (!e) {
      throw new BrokerError(
        "RECEIPT_HANDLE_UNKNOWN",
        `No POP receipt for ${group} queue ${key.queueId} offset ${key.queueOffset} popped at ${key.popTime}: it was settled, expired, or forgotten (remotingPopHandlesMax)`,
      );
    }
    if (!keep) this.#entries.delete(k);
    return e.handle;
  }
}

const keyOf = (group: string, k: PopReceiptKey) =>
  `${group}\u0000${k.popTime}\u0000${k.retry ? 1 : 0}\u0000${k.queueId}\u0000${k.queueOffset}`;

/** extraInfo as a 5.x client sends it (ExtraInfoUtil's layout); a malformed one is refused. */
export function parseExtraInfo(extraInfo: string, offset?: number): PopReceiptKey {
  const f = extraInfo.split(" ");
  const num = (i: number) => {
    const v = f[i];
    if (v === undefined || !/^-?\d{1,19}$/.test(v)) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        `Cannot read extraInfo ${
          JSON.stringify(extraInfo.slice(0, 200))
        }: field ${i} is not a number`,
      );
    }
    return Number(v);
  };
  return {
    popTime: num(1),
    retry: f[4] === "1",
    queueId: num(6),
    queueOffset: f.length > 7 ? num(7) : offset ?? num(7),
  };
}
