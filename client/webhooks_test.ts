// Standard Webhooks sign/verify. The example values are the published ones of the
// standard-webhooks repository (libraries/javascript/src/webhook.test.ts, "sign function
// works"; the same vector is in its other libraries' tests), not values computed here.
import assert from "node:assert/strict";
import {
  generateWebhookSecret,
  signWebhook,
  verifyWebhook,
  WEBHOOK_SECRET_BYTES_MAX,
  WEBHOOK_SECRET_BYTES_MIN,
  WebhookVerificationError,
  type WebhookVerificationErrorCode,
} from "./webhooks.ts";
import { secretKey, signatureHeader } from "../runtime/webhook/signing.ts";

const SPEC = {
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};
// From the same test file ("multi sig payload is valid"): signatures that match nothing.
const FOREIGN = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=";

function specHeaders(overrides: Record<string, string | undefined> = {}) {
  const headers: Record<string, string | undefined> = {
    "webhook-id": SPEC.id,
    "webhook-timestamp": String(SPEC.timestamp),
    "webhook-signature": SPEC.signature,
    ...overrides,
  };
  return headers;
}

async function rejects(
  promise: Promise<unknown>,
  code: WebhookVerificationErrorCode,
): Promise<WebhookVerificationError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof WebhookVerificationError, String(error));
    assert.equal(error.code, code, error.message);
    return error;
  }
  assert.fail(`expected ${code}`);
}

const at = { nowSec: SPEC.timestamp };

Deno.test("signWebhook() reproduces the Standard Webhooks example signature", async () => {
  const signature = await signWebhook({
    id: SPEC.id,
    timestamp: SPEC.timestamp,
    body: SPEC.body,
    secrets: SPEC.secret,
  });
  assert.equal(signature, SPEC.signature);
  // Bytes and string bodies sign alike; the prefix is optional on the secret.
  const fromBytes = await signWebhook({
    id: SPEC.id,
    timestamp: SPEC.timestamp,
    body: new TextEncoder().encode(SPEC.body),
    secrets: SPEC.secret.slice("whsec_".length),
  });
  assert.equal(fromBytes, SPEC.signature);
});

Deno.test("verifyWebhook() accepts the Standard Webhooks example, with Headers or a record", async () => {
  assert.deepEqual(await verifyWebhook(specHeaders(), SPEC.body, SPEC.secret, at), {
    id: SPEC.id,
    timestamp: SPEC.timestamp,
  });
  const fetchHeaders = new Headers(specHeaders() as Record<string, string>);
  await verifyWebhook(fetchHeaders, new TextEncoder().encode(SPEC.body), SPEC.secret, at);
  const upper = { "Webhook-Id": SPEC.id, "WEBHOOK-TIMESTAMP": String(SPEC.timestamp) };
  await verifyWebhook(
    { ...upper, "webhook-signature": SPEC.signature },
    SPEC.body,
    SPEC.secret,
    at,
  );
  // Among foreign and unknown-version signatures, the one that matches is found.
  const several = `${FOREIGN} v2,${SPEC.signature.slice(3)} ${SPEC.signature} v1a,xyz`;
  await verifyWebhook(specHeaders({ "webhook-signature": several }), SPEC.body, SPEC.secret, at);
});

Deno.test("verifyWebhook() rejects a tampered body, id or timestamp", async () => {
  await rejects(
    verifyWebhook(specHeaders(), '{"test": 2432232315}', SPEC.secret, at),
    "NO_MATCHING_SIGNATURE",
  );
  await rejects(
    verifyWebhook(specHeaders(), `${SPEC.body} `, SPEC.secret, at),
    "NO_MATCHING_SIGNATURE",
  );
  await rejects(
    verifyWebhook(
      specHeaders({ "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJel" }),
      SPEC.body,
      SPEC.secret,
      at,
    ),
    "NO_MATCHING_SIGNATURE",
  );
  const later = String(SPEC.timestamp + 1);
  await rejects(
    verifyWebhook(specHeaders({ "webhook-timestamp": later }), SPEC.body, SPEC.secret, at),
    "NO_MATCHING_SIGNATURE",
  );
  await rejects(
    verifyWebhook(specHeaders({ "webhook-signature": FOREIGN }), SPEC.body, SPEC.secret, at),
    "NO_MATCHING_SIGNATURE",
  );
  // One flipped bit of the signature itself.
  const flipped = SPEC.signature.replace("g0hM", "g0hN");
  await rejects(
    verifyWebhook(specHeaders({ "webhook-signature": flipped }), SPEC.body, SPEC.secret, at),
    "NO_MATCHING_SIGNATURE",
  );
  const otherSecret = generateWebhookSecret();
  await rejects(verifyWebhook(specHeaders(), SPEC.body, otherSecret, at), "NO_MATCHING_SIGNATURE");
});

Deno.test("verifyWebhook() rejects timestamps outside the tolerance, both ways", async () => {
  const headers = specHeaders();
  const old = await rejects(
    verifyWebhook(headers, SPEC.body, SPEC.secret, { nowSec: SPEC.timestamp + 301 }),
    "TIMESTAMP_TOO_OLD",
  );
  assert.equal(old.message, "webhook-timestamp is 301 s old > tolerance 300 s");
  await rejects(
    verifyWebhook(headers, SPEC.body, SPEC.secret, { nowSec: SPEC.timestamp - 301 }),
    "TIMESTAMP_TOO_NEW",
  );
  // The edges are inside; a custom tolerance moves them.
  await verifyWebhook(headers, SPEC.body, SPEC.secret, { nowSec: SPEC.timestamp + 300 });
  await verifyWebhook(headers, SPEC.body, SPEC.secret, { nowSec: SPEC.timestamp - 300 });
  await rejects(
    verifyWebhook(headers, SPEC.body, SPEC.secret, {
      nowSec: SPEC.timestamp + 11,
      toleranceSec: 10,
    }),
    "TIMESTAMP_TOO_OLD",
  );
  // Without nowSec the real clock is used: the 2021 example is far too old.
  await rejects(verifyWebhook(headers, SPEC.body, SPEC.secret), "TIMESTAMP_TOO_OLD");
});

Deno.test("verifyWebhook() rejects missing and malformed headers", async () => {
  for (const name of ["webhook-id", "webhook-timestamp", "webhook-signature"]) {
    await rejects(
      verifyWebhook(specHeaders({ [name]: undefined }), SPEC.body, SPEC.secret, at),
      "MISSING_HEADER",
    );
    await rejects(
      verifyWebhook(specHeaders({ [name]: " " }), SPEC.body, SPEC.secret, at),
      "MISSING_HEADER",
    );
  }
  for (const bad of ["hello", "-1614265330", "1614265330.5", "1e9", "0x60375cf2"]) {
    await rejects(
      verifyWebhook(specHeaders({ "webhook-timestamp": bad }), SPEC.body, SPEC.secret, at),
      "INVALID_HEADER",
    );
  }
  for (const partial of ["v1,", "v1", SPEC.signature.slice(0, 8), "v1,!!!!", "v1,AAAA"]) {
    await rejects(
      verifyWebhook(specHeaders({ "webhook-signature": partial }), SPEC.body, SPEC.secret, at),
      "NO_MATCHING_SIGNATURE",
    );
  }
  const many = Array(17).fill(FOREIGN).join(" ");
  await rejects(
    verifyWebhook(specHeaders({ "webhook-signature": many }), SPEC.body, SPEC.secret, at),
    "INVALID_HEADER",
  );
  const twice = { ...specHeaders(), "webhook-id": [SPEC.id, "msg_other"] };
  await rejects(verifyWebhook(twice, SPEC.body, SPEC.secret, at), "INVALID_HEADER");
});

Deno.test("verifyWebhook() with two secrets during a rotation accepts either signature", async () => {
  const next = generateWebhookSecret();
  const both = await signWebhook({
    id: SPEC.id,
    timestamp: SPEC.timestamp,
    body: SPEC.body,
    secrets: [SPEC.secret, next],
  });
  const [first, second] = both.split(" ");
  assert.equal(first, SPEC.signature);
  assert.match(second, /^v1,[A-Za-z0-9+/]{43}=$/);
  // A receiver that knows only one of the secrets verifies the two-signature header...
  await verifyWebhook(specHeaders({ "webhook-signature": both }), SPEC.body, next, at);
  await verifyWebhook(specHeaders({ "webhook-signature": both }), SPEC.body, SPEC.secret, at);
  // ...and a receiver holding both verifies a sender that still signs with only one.
  await verifyWebhook(specHeaders(), SPEC.body, [next, SPEC.secret], at);
  await verifyWebhook(
    specHeaders({ "webhook-signature": second }),
    SPEC.body,
    [SPEC.secret, next],
    at,
  );
});

Deno.test("signWebhook() then verifyWebhook() round-trips exact bytes", async () => {
  const secret = generateWebhookSecret();
  const body = new Uint8Array([0x7b, 0x00, 0xff, 0xfe, 0x7d]); // not valid UTF-8
  const headers = {
    "webhook-id": "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W",
    "webhook-timestamp": "1674087231",
    "webhook-signature": await signWebhook({
      id: "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W",
      timestamp: 1674087231,
      body,
      secrets: secret,
    }),
  };
  await verifyWebhook(headers, body, secret, { nowSec: 1674087231 });
  const changed = body.slice();
  changed[2] = 0xfd;
  await rejects(
    verifyWebhook(headers, changed, secret, { nowSec: 1674087231 }),
    "NO_MATCHING_SIGNATURE",
  );
});

Deno.test("client and broker signers agree (runtime/webhook/signing.ts, node:crypto)", async () => {
  const secret = generateWebhookSecret(48);
  const body = new TextEncoder().encode('{"type":"order.created"}');
  const fromBroker = signatureHeader([secretKey(secret)], "msg_1", 1700000000, body);
  const fromClient = await signWebhook({
    id: "msg_1",
    timestamp: 1700000000,
    body,
    secrets: secret,
  });
  assert.equal(fromClient, fromBroker);
  assert.equal(
    signatureHeader(
      [secretKey(SPEC.secret)],
      SPEC.id,
      SPEC.timestamp,
      new TextEncoder().encode(SPEC.body),
    ),
    SPEC.signature,
  );
});

Deno.test("generateWebhookSecret() makes whsec_ secrets of 24-64 random bytes", () => {
  const secret = generateWebhookSecret();
  assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/); // 32 bytes
  assert.notEqual(generateWebhookSecret(), secret);
  for (const bytes of [WEBHOOK_SECRET_BYTES_MIN, WEBHOOK_SECRET_BYTES_MAX]) {
    const decoded = atob(generateWebhookSecret(bytes).slice("whsec_".length));
    assert.equal(decoded.length, bytes);
  }
  for (const bytes of [23, 65, 0, 32.5]) {
    assert.throws(() => generateWebhookSecret(bytes), RangeError);
  }
});

Deno.test("signWebhook() and verifyWebhook() refuse malformed secrets and ids as TypeErrors", async () => {
  const input = { id: SPEC.id, timestamp: SPEC.timestamp, body: SPEC.body };
  for (const secret of ["whsec_", "whsec_not base64!", "whsec_c2hvcnQ=", "whsec_A"]) {
    await assert.rejects(signWebhook({ ...input, secrets: secret }), TypeError, secret);
    await assert.rejects(verifyWebhook(specHeaders(), SPEC.body, secret, at), TypeError, secret);
  }
  await assert.rejects(signWebhook({ ...input, secrets: [] }), TypeError);
  for (const id of ["", "msg.1", "msg 1"]) {
    await assert.rejects(signWebhook({ ...input, id, secrets: SPEC.secret }), TypeError, id);
  }
  for (const timestamp of [-1, 1.5, Number.NaN]) {
    await assert.rejects(signWebhook({ ...input, timestamp, secrets: SPEC.secret }), TypeError);
  }
});
