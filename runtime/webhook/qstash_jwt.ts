// The Upstash-Signature of a QStash delivery: a compact HS256 JWT whose key is the bytes of
// the whole `sig_…` key string, with QStash's claims in QStash's order (iss "Upstash", sub
// = the destination as published, exp = iat + 5 min, nbf 0 as the service now sets it,
// iat, jti, body = base64url SHA-256 of the body, padded as in QStash's docs), so
// @upstash/qstash's Receiver (jose's jwtVerify) accepts it.
//
// Signed with SigningKey (HMAC with both padded-key blocks hashed once per key), not
// jose's SignJWT: per delivery SignJWT took 31 µs on Bun and 52 µs on Deno against 4 and
// 12 µs here (WebCrypto's async sign; bench/README.md, "qstash_bench"), too much on the
// delivery path. qstash_jwt_test.ts checks the token byte for byte against the reference
// vector and against jose's own verify and sign.
import { nodeCrypto, randomBytes } from "../protocol/node_builtins.ts";
import { SigningKey } from "./signing.ts";

/** A token lives as long as QStash's: 5 minutes. */
export const QSTASH_TOKEN_LIFETIME_SEC = 300;
const HEADER = b64url(JSON.stringify({ alg: "HS256", typ: "JWT" }));
const EMPTY = new Uint8Array(0);

export class QstashJwtSigner {
  readonly #key: SigningKey;

  constructor(key: string) {
    this.#key = new SigningKey(new TextEncoder().encode(key));
  }

  /** The token for a delivery of `body` to `url` at `iatSec`; `jti` is made when absent. */
  sign(
    url: string,
    body: Uint8Array,
    iatSec: number,
    jti?: string,
    expSec = iatSec + QSTASH_TOKEN_LIFETIME_SEC,
  ): string {
    const payload = JSON.stringify({
      iss: "Upstash",
      sub: url,
      exp: expSec,
      nbf: 0,
      iat: iatSec,
      jti: jti ?? `jwt_${randomBytes(12).toString("hex")}`,
      body: nodeCrypto().createHash("sha256").update(body).digest("base64").replaceAll("+", "-")
        .replaceAll("/", "_"),
    });
    const input = `${HEADER}.${b64url(payload)}`;
    const mac = this.#key.sign(input, EMPTY);
    return `${input}.${mac.replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "")}`;
  }
}

function b64url(text: string): string {
  return Buffer.from(text).toString("base64url");
}
