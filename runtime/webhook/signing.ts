// Standard Webhooks 1.0 signing on the delivery path: HMAC-SHA256 over
// `${webhook-id}.${webhook-timestamp}.${body}`, base64, as `v1,<sig>`; one signature per
// secret, space-separated, so a receiver rotating secrets verifies with either. node:crypto
// is synchronous and several times cheaper per request than WebCrypto's importKey + sign;
// the SDK's verifier (client/webhooks.ts) is the WebCrypto twin and the tests check one
// against the other.
//
// SigningKey is HMAC by its definition (RFC 2104: H(K^opad || H(K^ipad || m))) with both
// padded-key blocks hashed once per key and the hash state copied per message: on Deno
// building an Hmac per delivery costs more than the hashing (figures: bench/README.md,
// "bench/webhook/push_bench.ts"). signing_test.ts checks it against createHmac.
import type { Hash } from "node:crypto";
import { nodeCrypto, randomBytes } from "../protocol/node_builtins.ts";
import { BrokerError } from "../protocol/errors.ts";

import { SECRET_BYTES_MAX, SECRET_BYTES_MIN } from "./secret_sizes.ts";

export { SECRET_BYTES_MAX, SECRET_BYTES_MIN };
const SECRET_PREFIX = "whsec_";
/** Secrets per subscription at once (a rotation needs two). */
export const SECRETS_MAX = 4;

/** The key bytes of a `whsec_<base64>` secret; a typed error if it is not one. */
export function secretKey(secret: string): Uint8Array {
  if (typeof secret !== "string" || !secret.startsWith(SECRET_PREFIX)) {
    throw new BrokerError("INVALID_PARAMETER", "A signing secret must look like whsec_<base64>");
  }
  const b64 = secret.slice(SECRET_PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) {
    throw new BrokerError("INVALID_PARAMETER", "A signing secret's key must be base64");
  }
  const key = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  if (key.length < SECRET_BYTES_MIN || key.length > SECRET_BYTES_MAX) {
    throw new BrokerError(
      "INVALID_PARAMETER",
      `A signing secret must hold ${SECRET_BYTES_MIN}-${SECRET_BYTES_MAX} bytes, not ${key.length}`,
    );
  }
  return key;
}

export function generateSecret(bytes = 32): string {
  return SECRET_PREFIX + randomBytes(bytes).toString("base64");
}

/** SHA-256's block: the B of RFC 2104, the length keys are padded to. */
const HMAC_SHA256_BLOCK_BYTES = 64;

/** One secret's HMAC-SHA256, ready to sign many messages. */
export class SigningKey {
  readonly #inner: Hash;
  readonly #outer: Hash;

  constructor(key: Uint8Array) {
    // RFC 2104 §2: a key longer than the block is hashed first.
    const k = key.length > HMAC_SHA256_BLOCK_BYTES
      ? nodeCrypto().createHash("sha256").update(key).digest()
      : key;
    const ipad = new Uint8Array(HMAC_SHA256_BLOCK_BYTES).fill(0x36);
    const opad = new Uint8Array(HMAC_SHA256_BLOCK_BYTES).fill(0x5c);
    for (let i = 0; i < k.length; i++) {
      ipad[i] ^= k[i];
      opad[i] ^= k[i];
    }
    this.#inner = nodeCrypto().createHash("sha256").update(ipad);
    this.#outer = nodeCrypto().createHash("sha256").update(opad);
  }

  /** base64(HMAC-SHA256(key, prefix || body)). */
  sign(prefix: string, body: Uint8Array): string {
    const inner = this.#inner.copy().update(prefix).update(body).digest();
    return this.#outer.copy().update(inner).digest("base64");
  }
}

/** The `webhook-signature` header value for one delivery attempt. */
export function signatureHeader(
  keys: readonly (Uint8Array | SigningKey)[],
  id: string,
  timestampSec: number,
  body: Uint8Array,
): string {
  const prefix = `${id}.${timestampSec}.`;
  let header = "";
  for (const key of keys) {
    const sig = key instanceof SigningKey
      ? key.sign(prefix, body)
      : nodeCrypto().createHmac("sha256", key).update(prefix).update(body).digest("base64");
    header = header === "" ? `v1,${sig}` : `${header} v1,${sig}`;
  }
  return header;
}

/** A secret as shown after creation: enough to tell two apart, not enough to sign. */
export function maskSecret(secret: string): string {
  return secret.slice(0, SECRET_PREFIX.length + 4) + "…";
}
