import assert from "node:assert/strict";
import { decodeJwt, jwtVerify, SignJWT } from "jose";
import { QstashJwtSigner } from "./qstash_jwt.ts";

const enc = new TextEncoder();
// reference/qstash.md §5.4: a token the @upstash/qstash 2.12.0 Receiver accepts.
const KEY = "sig_exampleCurrentKey000000000000";
const VECTOR =
  "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJVcHN0YXNoIiwic3ViIjoiaHR0cDovLzEyNy4wLjAuMTozMDAwL29rIiwiZXhwIjo0MTAyNDQ0ODAwLCJuYmYiOjAsImlhdCI6MTc2NzIyNTYwMCwianRpIjoiand0X2V4YW1wbGUiLCJib2R5IjoiazZJNWNha1U1ZXJMOEtqU1VWVE5vd25Ed2NjdnU1a1UxSHhnODh0b0ZZZz0ifQ.lIWro0ELft0a5inv8EoEcUEic0Ztf7_xRp_glmIinHc";

Deno.test("the QStash JWT matches the reference vector byte for byte", () => {
  const signer = new QstashJwtSigner(KEY);
  const body = enc.encode('{"hello":"world"}');
  const url = "http://127.0.0.1:3000/ok";
  assert.equal(signer.sign(url, body, 1767225600, "jwt_example", 4102444800), VECTOR);
  const token = signer.sign(url, body, 1767225600);
  assert.equal(decodeJwt(token).exp, 1767225600 + 300);
  assert.match(String(decodeJwt(token).jti), /^jwt_[0-9a-f]{24}$/);
});

Deno.test("jose verifies our tokens and signs the same bytes for the same claims", async () => {
  const key = "sig_" + "k".repeat(28);
  const signer = new QstashJwtSigner(key);
  const iat = Math.floor(Date.now() / 1000);
  const body = enc.encode("a body with + and / in its hash?");
  const token = signer.sign("https://example.com/x?y=1", body, iat, "jwt_1");
  const { payload } = await jwtVerify(token, enc.encode(key), { issuer: "Upstash" });
  assert.equal(payload.sub, "https://example.com/x?y=1");
  await assert.rejects(jwtVerify(token, enc.encode(key + "x"), { issuer: "Upstash" }));
  const joseToken = await new SignJWT(payload).setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .sign(enc.encode(key));
  assert.equal(token, joseToken);
});
