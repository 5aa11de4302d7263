// Standard Webhooks 1.0 signatures for receivers and tests of the SDK
// (https://github.com/standard-webhooks/standard-webhooks, spec/standard-webhooks.md;
// reference/reliability.md §6.1). WebCrypto and atob/btoa only, so the same file runs on
// Deno, Bun, Node and in browsers.
//
// Signed content: `${webhook-id}.${webhook-timestamp}.` followed by the body's exact
// bytes; signature: base64(HMAC-SHA256(secret key, content)), sent as `v1,<base64>`.
// During a secret rotation the sender signs with each secret and sends the signatures
// space-separated in one `webhook-signature` header; one match verifies.

/** Receivers refuse a timestamp further than this from their clock, s (the libraries' 5 min). */
export const WEBHOOK_TOLERANCE_SEC_DEFAULT = 300;
/** Secret sizes, bytes: the spec's "at least 24 bytes", and 512 bits at most. */
export const WEBHOOK_SECRET_BYTES_MIN = 24;
export const WEBHOOK_SECRET_BYTES_MAX = 64;
export const WEBHOOK_SECRET_BYTES_DEFAULT = 32;
/** Signatures looked at in one header; a rotation needs two, so more is an attack or a bug. */
export const WEBHOOK_SIGNATURES_MAX = 16;
/** Longest webhook-id accepted, characters (ids are ours, e.g. "msg_" + 26 chars). */
export const WEBHOOK_ID_CHARS_MAX = 256;

const SECRET_PREFIX = "whsec_";
const HMAC_BYTES = 32;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

export type WebhookVerificationErrorCode =
  | "MISSING_HEADER" // webhook-id, webhook-timestamp or webhook-signature absent or empty
  | "INVALID_HEADER" // a timestamp that is not whole seconds, an id too long, duplicates
  | "TIMESTAMP_TOO_OLD" // older than the tolerance: a replay, or a slow queue
  | "TIMESTAMP_TOO_NEW" // further ahead than the tolerance: the sender's clock is off
  | "NO_MATCHING_SIGNATURE"; // no v1 signature matches any of the secrets

/** The request is not a genuine, fresh delivery. `code` is stable; answer it with 400/401. */
export class WebhookVerificationError extends Error {
  readonly code: WebhookVerificationErrorCode;
  constructor(code: WebhookVerificationErrorCode, message: string) {
    super(message);
    this.code = code;
    this.name = "WebhookVerificationError";
  }
}

export interface SignWebhookInput {
  /** The webhook-id: stable across retries; must not contain ".". */
  readonly id: string;
  /** The webhook-timestamp of this attempt, whole seconds since the epoch. */
  readonly timestamp: number;
  /** The body exactly as it will be sent (a string is sent as its UTF-8 bytes). */
  readonly body: string | Uint8Array;
  /** One `whsec_<base64>` (or bare base64) secret, or several during a rotation. */
  readonly secrets: string | readonly string[];
}

/** The `webhook-signature` header value: `v1,<base64>` per secret, space-separated. */
export async function signWebhook(input: SignWebhookInput): Promise<string> {
  if (input.id.length === 0 || input.id.includes(".") || /[\s,]/.test(input.id)) {
    throw new TypeError("Cannot sign a webhook: its id must be non-empty, without '.' or spaces");
  }
  if (!Number.isSafeInteger(input.timestamp) || input.timestamp < 0) {
    throw new TypeError(`Cannot sign a webhook: timestamp ${input.timestamp} is not whole seconds`);
  }
  const content = signedContent(input.id, String(input.timestamp), input.body);
  const signatures: string[] = [];
  for (const secret of asList(input.secrets)) {
    signatures.push(`v1,${toBase64(await hmac(await importSecret(secret), content))}`);
  }
  return signatures.join(" ");
}

/** Header access for Fetch `Headers` and for plain objects (e.g. node:http's). */
export type WebhookHeaders =
  | Headers
  | Readonly<Record<string, string | readonly string[] | undefined>>;

export interface VerifyWebhookOptions {
  /** Default WEBHOOK_TOLERANCE_SEC_DEFAULT. */
  readonly toleranceSec?: number;
  /** The receiver's clock, whole seconds. Default: Date.now() (the SDK has no platform
   * clock to be handed); tests pass their own. */
  readonly nowSec?: number;
}

export interface VerifiedWebhook {
  /** Deduplicate on this: a retry carries the same id. */
  readonly id: string;
  readonly timestamp: number;
}

/**
 * Checks headers and body of a delivery against the endpoint's secrets. Resolves with id and
 * timestamp, or rejects with a WebhookVerificationError. A malformed secret is a
 * configuration error and throws a TypeError instead.
 */
export async function verifyWebhook(
  headers: WebhookHeaders,
  body: string | Uint8Array,
  secrets: string | readonly string[],
  options: VerifyWebhookOptions = {},
): Promise<VerifiedWebhook> {
  const keys = await Promise.all(asList(secrets).map(importSecret));
  const id = header(headers, "webhook-id");
  const timestampText = header(headers, "webhook-timestamp");
  const signatureText = header(headers, "webhook-signature");
  if (id.length > WEBHOOK_ID_CHARS_MAX) {
    throw invalid("INVALID_HEADER", `webhook-id has ${id.length} > ${WEBHOOK_ID_CHARS_MAX} chars`);
  }
  if (!/^\d{1,15}$/.test(timestampText)) {
    throw invalid("INVALID_HEADER", "webhook-timestamp is not whole seconds since the epoch");
  }
  const timestamp = Number(timestampText);
  const nowSec = options.nowSec ?? Math.floor(Date.now() / 1000);
  const toleranceSec = options.toleranceSec ?? WEBHOOK_TOLERANCE_SEC_DEFAULT;
  if (timestamp < nowSec - toleranceSec) {
    const why = `${nowSec - timestamp} s old > tolerance ${toleranceSec} s`;
    throw invalid("TIMESTAMP_TOO_OLD", `webhook-timestamp is ${why}`);
  }
  if (timestamp > nowSec + toleranceSec) {
    const why = `${timestamp - nowSec} s ahead > tolerance ${toleranceSec} s`;
    throw invalid("TIMESTAMP_TOO_NEW", `webhook-timestamp is ${why}`);
  }
  const candidates = v1Signatures(signatureText);
  const content = signedContent(id, timestampText, body);
  for (const key of keys) {
    const expected = await hmac(key, content);
    if (candidates.some((candidate) => constantTimeEqual(candidate, expected))) {
      return { id, timestamp };
    }
  }
  const tried = `${candidates.length} v1 signature(s) against ${keys.length} secret(s)`;
  throw invalid("NO_MATCHING_SIGNATURE", `No webhook-signature matches: ${tried}`);
}

/** A new secret of `bytes` random bytes (24–64), as `whsec_<base64>`. */
export function generateWebhookSecret(bytes: number = WEBHOOK_SECRET_BYTES_DEFAULT): string {
  if (
    !Number.isInteger(bytes) || bytes < WEBHOOK_SECRET_BYTES_MIN ||
    bytes > WEBHOOK_SECRET_BYTES_MAX
  ) {
    const range = `${WEBHOOK_SECRET_BYTES_MIN}..${WEBHOOK_SECRET_BYTES_MAX}`;
    throw new RangeError(`Cannot generate a ${bytes}-byte secret: bytes must be in ${range}`);
  }
  return SECRET_PREFIX + toBase64(crypto.getRandomValues(new Uint8Array(bytes)));
}

function asList(secrets: string | readonly string[]): readonly string[] {
  const list = typeof secrets === "string" ? [secrets] : secrets;
  if (list.length === 0) throw new TypeError("No webhook secret given");
  return list;
}

async function importSecret(secret: string): Promise<CryptoKey> {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  if (!BASE64.test(encoded)) {
    throw new TypeError("A webhook secret must be whsec_<base64> or base64");
  }
  const key = fromBase64(encoded);
  if (key === undefined) throw new TypeError("A webhook secret's base64 does not decode");
  if (key.length < WEBHOOK_SECRET_BYTES_MIN || key.length > WEBHOOK_SECRET_BYTES_MAX) {
    const range = `${WEBHOOK_SECRET_BYTES_MIN}..${WEBHOOK_SECRET_BYTES_MAX}`;
    throw new TypeError(`A webhook secret must hold ${range} bytes, not ${key.length}`);
  }
  return await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
}

async function hmac(key: CryptoKey, content: Uint8Array<ArrayBuffer>): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.sign("HMAC", key, content));
}

function signedContent(
  id: string,
  timestamp: string,
  body: string | Uint8Array,
): Uint8Array<ArrayBuffer> {
  const encoder = new TextEncoder();
  const head = encoder.encode(`${id}.${timestamp}.`);
  const tail = typeof body === "string" ? encoder.encode(body) : body;
  const content = new Uint8Array(head.length + tail.length);
  content.set(head, 0);
  content.set(tail, head.length);
  return content;
}

function header(headers: WebhookHeaders, name: string): string {
  let value: string | null | undefined;
  if (headers instanceof Headers) value = headers.get(name);
  else {
    const key = Object.keys(headers).find((k) => k.toLowerCase() === name);
    const raw = key === undefined ? undefined : headers[key];
    if (typeof raw !== "string" && raw !== undefined && raw.length > 1) {
      throw invalid("INVALID_HEADER", `${name} is sent more than once`);
    }
    value = typeof raw === "string" ? raw : raw?.[0];
  }
  if (value === null || value === undefined || value.trim() === "") {
    throw invalid("MISSING_HEADER", `${name} header is missing`);
  }
  return value.trim();
}

/** The decoded `v1` signatures of a header; other versions (v1a, ...) are skipped. */
function v1Signatures(value: string): Uint8Array[] {
  const entries = value.split(" ").filter((entry) => entry !== "");
  if (entries.length > WEBHOOK_SIGNATURES_MAX) {
    const why = `${entries.length} > ${WEBHOOK_SIGNATURES_MAX} entries`;
    throw invalid("INVALID_HEADER", `webhook-signature has ${why}`);
  }
  const signatures: Uint8Array[] = [];
  for (const entry of entries) {
    const comma = entry.indexOf(",");
    if (entry.slice(0, comma) !== "v1") continue;
    const encoded = entry.slice(comma + 1);
    if (!BASE64.test(encoded)) continue;
    const bytes = fromBase64(encoded);
    if (bytes?.length === HMAC_BYTES) signatures.push(bytes);
  }
  return signatures;
}

/** Time independent of where the first difference is: no oracle for forging byte by byte. */
function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false; // lengths are public (always 32 here)
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a[i] ^ b[i];
  return difference === 0;
}

function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** Undefined for text atob refuses (a length that is not a base64 length). */
function fromBase64(text: string): Uint8Array<ArrayBuffer> | undefined {
  let binary: string;
  try {
    binary = atob(text);
  } catch {
    return undefined;
  }
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function invalid(code: WebhookVerificationErrorCode, message: string): WebhookVerificationError {
  return new WebhookVerificationError(code, message);
}
