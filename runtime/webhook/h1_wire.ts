// HTTP/1.1 bytes for the webhook client: the request head and body written as one buffer,
// and the line and head ends searched for in a response. Pure helpers, no sockets.
import { Buffer } from "node:buffer";
import { NOT_OURS, type PinnedPostRequest, type PreparedTarget } from "./http_delivery.ts";

/** RFC 9110 token: a header name. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** A header value we can send as latin1 bytes: no CR, LF, NUL or other controls but tab. */
const BAD_VALUE = /[^\t\x20-\x7e\x80-\xff]/;
/** Longest chunk-size or trailer line we read. */
export const CHUNK_LINE_BYTES_MAX = 4096;

/** [end of the line's content, index after its LF] of the first line end at or after
 * `from` (LF or CR LF); undefined if none yet. */
export function lineEnd(bytes: Buffer, from: number): [number, number] | undefined {
  const lf = bytes.indexOf(10, from);
  if (lf < 0) return undefined;
  return [lf > 0 && bytes[lf - 1] === 13 ? lf - 1 : lf, lf + 1];
}

/** [end of the head, index after the empty line that ends it], the empty line being LF
 * or CR LF after a line end; undefined if not there yet. */
export function headEnd(bytes: Buffer, from: number): [number, number] | undefined {
  for (let lf = bytes.indexOf(10, from); lf >= 0; lf = bytes.indexOf(10, lf + 1)) {
    if (bytes[lf + 1] === 10) return [lf, lf + 2];
    if (bytes[lf + 1] === 13 && bytes[lf + 2] === 10) return [lf, lf + 3];
    if (lf + 2 >= bytes.length) return undefined;
  }
  return undefined;
}

/** The whole request to `target`, head and body, as one buffer; or why it cannot be sent. */
export function requestBytes(
  target: PreparedTarget,
  request: PinnedPostRequest,
  userAgent: string,
): Uint8Array | string {
  const body = typeof request.body === "string" ? Buffer.from(request.body) : request.body;
  let head = `${request.method ?? "POST"} ${target.path} HTTP/1.1\r\nhost: ${target.url.host}\r\n`;
  let agent = false;
  const given = request.headers ?? {};
  for (const name of Object.keys(given)) {
    const value = given[name];
    const lower = name.toLowerCase();
    if (NOT_OURS.has(lower)) continue;
    if (!TOKEN.test(name) || BAD_VALUE.test(value)) return `Cannot send header ${name}`;
    if (lower === "user-agent") agent = true;
    head += `${name}: ${value}\r\n`;
  }
  if (!agent) head += `user-agent: ${userAgent}\r\n`;
  head += `content-length: ${body.byteLength}\r\n\r\n`;
  const headBytes = Buffer.byteLength(head, "latin1");
  const out = Buffer.allocUnsafe(headBytes + body.byteLength);
  out.write(head, 0, "latin1");
  out.set(body, headBytes);
  return out;
}
