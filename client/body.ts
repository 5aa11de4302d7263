// Message bodies on the wire: bytes as base64 in JSON, text as itself.
import type { WireMessage } from "./types.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** The body of a pulled or received message as bytes. */
export function messageBody(message: WireMessage): Uint8Array {
  if (message.bodyEncoding === "utf8") return enc.encode(message.body);
  const s = atob(message.body);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

/** The body of a pulled or received message as text (UTF-8). */
export function messageText(message: WireMessage): string {
  return message.bodyEncoding === "utf8" ? message.body : dec.decode(messageBody(message));
}

export function utf8(text: string): Uint8Array {
  return enc.encode(text);
}

export function base64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
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
