import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { Metadata } from "@grpc/grpc-js";
import { GrpcAuth } from "./auth.ts";

const KEY = { key: "grpc-unit-key-0123456789", name: "unit", publish: ["orders"] };
const DATE = "20261204T203000Z";

function signed(name: string, secret: string, date = DATE, lower = false): Metadata {
  const md = new Metadata();
  md.set("x-mq-client-id", "host@1@0@abc");
  md.set("x-mq-date-time", date);
  let sig = createHmac("sha1", secret).update(DATE).digest("hex").toUpperCase();
  if (lower) sig = sig.toLowerCase();
  md.set(
    "authorization",
    `MQv2-HMAC-SHA1 Credential=${name}, SignedHeaders=x-mq-date-time, Signature=${sig}`,
  );
  return md;
}

Deno.test("GrpcAuth.caller() accepts RocketMQ's HMAC-SHA1 signature by key name, any hex case", async () => {
  const auth = await GrpcAuth.create([KEY]);
  for (const lower of [false, true]) {
    const caller = await auth.caller(signed("unit", KEY.key, DATE, lower));
    assert.equal(caller.principal.name, "unit");
    assert.equal(caller.clientId, "host@1@0@abc");
  }
  // Go's Credential form: "<AK>//Rocketmq".
  const md = signed("unit", KEY.key);
  md.set("authorization", String(md.get("authorization")[0]).replace("=unit,", "=unit//Rocketmq,"));
  assert.equal((await auth.caller(md)).principal.name, "unit");
});

Deno.test("GrpcAuth.caller() refuses a wrong secret, another date, an unknown name or nothing", async () => {
  const auth = await GrpcAuth.create([KEY]);
  const refused = (e: { code?: string }) => e.code === "UNAUTHORIZED";
  await assert.rejects(auth.caller(signed("unit", "not-the-key-00000000")), refused);
  await assert.rejects(auth.caller(signed("unit", KEY.key, "20261204T203001Z")), refused);
  await assert.rejects(auth.caller(signed("nobody", KEY.key)), refused);
  await assert.rejects(auth.caller(new Metadata()), refused);
});

Deno.test("GrpcAuth.allow() applies the HTTP API's rights; Bearer keys work too", async () => {
  const auth = await GrpcAuth.create([KEY]);
  const md = new Metadata();
  md.set("authorization", `Bearer ${KEY.key}`);
  const caller = await auth.caller(md);
  auth.allow(caller, "publish", { topic: "orders" });
  assert.throws(() => auth.allow(caller, "publish", { topic: "payments" }), { code: "FORBIDDEN" });
  assert.throws(() => auth.allow(caller, "subscribe", { topic: "orders" }), { code: "FORBIDDEN" });
});

Deno.test("GrpcAuth with no keys is open", async () => {
  const auth = await GrpcAuth.create([]);
  assert.equal((await auth.caller(new Metadata())).principal.name, "anonymous");
});

Deno.test("GrpcAuth.caller() caches a verified signature, never what it would refuse", async () => {
  const auth = await GrpcAuth.create([KEY]);
  const refused = (e: { code?: string }) => e.code === "UNAUTHORIZED";
  assert.equal((await auth.caller(signed("unit", KEY.key))).principal.name, "unit");
  // Same date, same name, another signature; the cached signature under another date.
  await assert.rejects(auth.caller(signed("unit", "not-the-key-00000000")), refused);
  await assert.rejects(auth.caller(signed("unit", KEY.key, "20261204T203001Z")), refused);
  const again = await auth.caller(signed("unit", KEY.key));
  assert.equal(again.principal.name, "unit");
  assert.equal(again.principal.key, KEY);
});
