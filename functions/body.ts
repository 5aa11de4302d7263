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
  if (declared !== null) {
    // A declared length the server enforces: read it whole (much cheaper than a stream
    // reader, on Bun above all), still under the deadline.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new BrokerError(
              "REQUEST_TIMEOUT",
              `Cannot wait longer than ${deadlineMs} ms for the request body (bodyReadTimeoutMs)`,
            ),
          ),
        deadlineMs,
      );
    });
    try {
      return new Uint8Array(await Promise.race([request.arrayBuffer(), timeout]));
    } finally {
      clearTimeout(timer);
    }
  }
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new BrokerError(
            "REQUEST_TIMEOUT",
            `Cannot wait longer than ${deadlineMs} ms for the request body (bodyReadTimeoutMs)`,
          ),
        ),
      deadlineMs,
    );
  });
  try {
    for (;;) {
      const { done, value } = await Promise.race([reader.read(), timeout]);
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
  } finally {
    clearTimeout(timer);
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
