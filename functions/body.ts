// Request bodies read by us, with a byte limit and a deadline, on both runtimes:
// Deno.serve has no body limit and keeps slow bodies open (reliability.md §5.2), so the
// limit is checked on the declared length first and then counted while streaming, and a
// body that does not arrive in time is refused with 408.
import { BrokerError } from "../runtime/protocol/errors.ts";

export async function readBody(
  request: Request,
  maxBytes: number,
  deadlineMs: number,
): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
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
  if (!request.body) return new Uint8Array(0);
  const deadline = new Deadline(deadlineMs);
  try {
    // A declared length the server enforces: read it whole (much cheaper than a stream
    // reader, on Bun above all). Otherwise count chunks as they come.
    if (declared !== null) return new Uint8Array(await deadline.race(request.arrayBuffer()));
    return await readCounting(request.body.getReader(), maxBytes, deadline);
  } finally {
    deadline.clear();
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

/** One timer per body: every await of the read races it. */
class Deadline {
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #expired: Promise<never>;

  constructor(ms: number) {
    this.#expired = new Promise<never>((_, reject) => {
      this.#timer = setTimeout(
        () =>
          reject(
            new BrokerError(
              "REQUEST_TIMEOUT",
              `Cannot wait longer than ${ms} ms for the request body (bodyReadTimeoutMs)`,
            ),
          ),
        ms,
      );
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
