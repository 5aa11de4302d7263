// Message bodies on the wire: bytes as base64 in JSON, text as itself.
import type { WireMessage } from "./types.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** The body of a pulled or received message as bytes. */
export function messageBody(message: WireMessage): Uint8Array {
  if (message.bodyEncoding === "utf8") return enc.encode(message.body);
  return fromBase64(message.body);
}

/** The body of a pulled or received message as text (UTF-8). */
export function messageText(message: WireMessage): string {
  return message.bodyEncoding === "utf8" ? message.body : dec.decode(messageBody(message));
}

export function utf8(text: string): Uint8Array {
  return enc.encode(text);
}

/** Uint8Array's base64 methods (ES2026; Deno 2 and Bun have them), where the runtime has
 * them: about 100 times faster than the fallbacks below (bench/README.md "Cluster"). */
const B64 = Uint8Array as unknown as { fromBase64?: (s: string) => Uint8Array };
const HAS_TO_BASE64 = typeof (Uint8Array.prototype as { toBase64?: unknown }).toBase64 ===
  "function";
/** Chunk for String.fromCharCode.apply: well below any engine's argument limit. */
const CHUNK = 0x1000;

export function base64(bytes: Uint8Array): string {
  if (HAS_TO_BASE64) return (bytes as Uint8Array & { toBase64(): string }).toBase64();
  let s = "";
  for (let i = 0; i < bytes.length; i += CHUNK) {
    // apply, not a spread: a spread of thousands of arguments is ~10 times slower.
    s += String.fromCharCode.apply(null, bytes.subarray(i, i + CHUNK) as unknown as number[]);
  }
  return btoa(s);
}

/** Bytes from base64 (the caller has checked the alphabet and padding). */
export function fromBase64(text: string): Uint8Array {
  if (B64.fromBase64) return B64.fromBase64(text);
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

/** A message's JSON form: text as is, bytes as base64. */
export function jsonBody<M extends { body: string | Uint8Array }>(
  message: M,
): Omit<M, "body"> & { body: string; bodyEncoding?: "base64" } {
  const { body, ...rest } = message;
  return typeof body === "string"
    ? { ...rest, body }
    : { ...rest, body: base64(body), bodyEncoding: "base64" };
}
