// Tokens the cluster router hands out for things a broker group made: POP receipt handles
// and transaction ids. A later call (ack, nack, changeInvisibleTime, endTransaction…) must
// reach the same group, so the router wraps the group's own token with the group's name:
//
//     "@" + base64url(UTF-8 group name) + "." + the group's own token
//
// Reversible, and unambiguous since base64url has no "." and the group's token is taken
// whole after the first ".". A token that does not decode gets the typed error the broker
// gives for a bad one of its own (RECEIPT_HANDLE_UNKNOWN, TRANSACTION_NOT_FOUND).
import { BrokerError, type ProblemCode } from "../protocol/errors.ts";

const MARK = "@";
const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

export function wrapToken(group: string, token: string): string {
  return MARK + base64url(encoder.encode(group)) + "." + token;
}

/** The group and its own token, or undefined when `wrapped` is not a router token. */
export function unwrapToken(wrapped: string): { group: string; token: string } | undefined {
  if (typeof wrapped !== "string" || !wrapped.startsWith(MARK)) return undefined;
  const dot = wrapped.indexOf(".");
  if (dot < 2 || dot === wrapped.length - 1) return undefined;
  const name = wrapped.slice(1, dot);
  if (!/^[A-Za-z0-9_-]+$/.test(name)) return undefined;
  try {
    return { group: decoder.decode(fromBase64url(name)), token: wrapped.slice(dot + 1) };
  } catch {
    return undefined;
  }
}

export function unwrapReceiptHandle(wrapped: string, group: string) {
  return unwrapOr(
    wrapped,
    "RECEIPT_HANDLE_UNKNOWN",
    () =>
      `Unknown receipt handle ${JSON.stringify(String(wrapped).slice(0, 64))} for group ${group}`,
  );
}

export function unwrapTransactionId(wrapped: string) {
  return unwrapOr(wrapped, "TRANSACTION_NOT_FOUND", () => `No transaction ${wrapped}`);
}

function unwrapOr(wrapped: string, code: ProblemCode, detail: () => string) {
  const parts = unwrapToken(wrapped);
  if (parts === undefined) throw new BrokerError(code, detail());
  return parts;
}

function base64url(bytes: Uint8Array): string {
  let text = "";
  for (const b of bytes) text += String.fromCharCode(b);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64url(text: string): Uint8Array {
  const b64 = text.replace(/-/g, "+").replace(/_/g, "/");
  return Uint8Array.from(atob(b64 + "=".repeat((4 - b64.length % 4) % 4)), (c) => c.charCodeAt(0));
}
