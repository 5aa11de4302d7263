// Request bodies read by us, with a byte limit and a deadline, on both runtimes:
// Deno.serve has no body limit and keeps slow bodies open (reliability.md §5.2), so the
// limit is checked on the declared length first and then counted while streaming, and a
// body that does not arrive in time is refused with 408.
import { BrokerError } from "../runtime/protocol/errors.ts";

export async function readBody(
  request: Request,
  maxBytes: number,
  deadlines: BodyDeadlines,
  /** The Content-Length header when the caller has read the headers already. */
  declared: string | null = request.headers.get("content-length"),
): Promise<Uint8Array> {
  if (declared !== null) {
    if (!/^\d{1,15}$/.test(declared)) {
      throw new BrokerError(
        "INVALID_HEADER",
        `Cannot use Content-Length ${JSON.stringify(declared)}`,
      );
    }
    if (Number(declared) > maxBytes) {
      throw new BrokerError(
        "PAYLOAD_TOO_LARGE",
        `Cannot accept a body of ${declared} bytes: the limit is ${maxBytes} bytes`,
        { limit: maxBytes },
      );
    }
  }
  // A declared length the server enforces: read it whole (much cheaper than a stream
  // reader, on Bun above all). Otherwise count chunks as they come. The declared path does
  // not touch `request.body`: on Deno that getter builds a ReadableStream, and arrayBuffer()
  // then drains it instead of taking the body whole (no body reads as empty either way).
  try {
    if (declared !== null) return new Uint8Array(await deadlines.race(request.arrayBuffer()));
    if (!request.body) return new Uint8Array(0);
    const deadline = new Deadline(deadlines.ms);
    try {
      return await readCounting(request.body.getReader(), maxBytes, deadline);
    } finally {
      deadline.clear();
    }
  } catch (err) {
    throw bodyError(err);
  }
}

/**
 * A body that fails to arrive (the client closed the connection or sent a malformed chunk)
 * is the client's fault, not an internal error: a typed 400, logged by nobody.
 */
function bodyError(err: unknown): BrokerError {
  if (err instanceof BrokerError) return err;
  return new BrokerError(
    "BODY_INCOMPLETE",
    `Cannot read the request body: ${err instanceof Error ? err.message : String(err)}`,
    {},
    { cause: err },
  );
}

function timeoutError(ms: number): BrokerError {
  return new BrokerError(
    "REQUEST_TIMEOUT",
    `Cannot wait longer than ${ms} ms for the request body (bodyReadTimeoutMs)`,
  );
}

interface PendingRead {
  deadlineMs: number;
  done: boolean;
  reject: (err: BrokerError) => void;
}

/**
 * The whole-body reads of one app, oldest first, under one timer armed for the oldest
 * deadline. A setTimeout plus Promise.race per request is a large part of a produce's heap
 * and CPU on Deno (node:timers Timeout objects; bench/README.md). Every read of an app
 * has the same limit, so deadlines come in the order reads start; each read still fails
 * at its own deadline, as with a timer of its own. Finished reads leave from the front,
 * so the queue holds about the reads in flight.
 */
export class BodyDeadlines {
  readonly ms: number;
  readonly #nowMs: () => number;
  #reads: PendingRead[] = [];
  #head = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;

  /** `nowMs`: a monotonic clock in ms (performance.now). */
  constructor(ms: number, nowMs: () => number) {
    this.ms = ms;
    this.#nowMs = nowMs;
  }

  /** `p`, or REQUEST_TIMEOUT once `ms` have passed since this call. */
  race<T>(p: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const read: PendingRead = { deadlineMs: this.#nowMs() + this.ms, done: false, reject };
      this.#reads.push(read);
      if (this.#timer === undefined) this.#arm(this.ms);
      p.then((value) => {
        this.#finish(read);
        resolve(value);
      }, (err) => {
        this.#finish(read);
        reject(err);
      });
    });
  }

  /** Stops the timer; reads still pending then never time out (tests, shutdown). */
  close() {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #finish(read: PendingRead) {
    read.done = true;
    const reads = this.#reads;
    while (this.#head < reads.length && reads[this.#head].done) this.#head++;
    if (this.#head === reads.length) {
      reads.length = 0;
      this.#head = 0;
    } else if (this.#head >= 1024 && this.#head * 2 >= reads.length) {
      reads.splice(0, this.#head);
      this.#head = 0;
    }
  }

  /** Left armed when the queue empties: it then fires once for nothing, instead of a
   * setTimeout and clearTimeout per request. Unref'd: it never keeps a process alive. */
  #arm(ms: number) {
    const timer = setTimeout(() => this.#fire(), ms);
    (timer as { unref?: () => void }).unref?.();
    this.#timer = timer;
  }

  #fire() {
    this.#timer = undefined;
    const now = this.#nowMs();
    const reads = this.#reads;
    while (this.#head < reads.length) {
      const read = reads[this.#head];
      if (!read.done) {
        if (read.deadlineMs > now) break;
        read.done = true;
        read.reject(timeoutError(this.ms));
      }
      this.#head++;
    }
    if (this.#head === reads.length) {
      reads.length = 0;
      this.#head = 0;
    } else {
      this.#arm(Math.max(1, reads[this.#head].deadlineMs - now));
    }
  }
}

async function readCounting(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  maxBytes: number,
  deadline: Deadline,
): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await deadline.race(reader.read());
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) {
        throw new BrokerError("PAYLOAD_TOO_LARGE", `Cannot accept a body over ${maxBytes} bytes`, {
          limit: maxBytes,
        });
      }
      chunks.push(value);
    }
  } catch (err) {
    reader.cancel().catch(() => {});
    throw err;
  }
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/** One timer per streamed body (no Content-Length): every await of the read races it. */
class Deadline {
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #expired: Promise<never>;

  constructor(ms: number) {
    this.#expired = new Promise<never>((_, reject) => {
      this.#timer = setTimeout(() => reject(timeoutError(ms)), ms);
    });
    this.#expired.catch(() => {}); // raced by reads; unobserved once the body is in
  }

  race<T>(p: Promise<T>): Promise<T> {
    return Promise.race([p, this.#expired]);
  }

  clear() {
    clearTimeout(this.#timer);
  }
}
