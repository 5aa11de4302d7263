// The QStash API (/v2) where the broker is not in the front end's process: the real
// @upstash/qstash Client publishes through a split-mode functions process (QstashApi over
// the brokers' /v1/qstash routes) in front of a replicated group, a Receiver verifies the
// deliveries; then the master is SIGKILLed and a delivery made by the promoted slave
// verifies with the same current key (the keys are replicated metadata), as do the keys
// the new master's own /v2 (found through the HA node) reports; deleted and retried dead
// letters stay gone.
import assert from "node:assert/strict";
import { Client, Receiver } from "@upstash/qstash";
import { RUNTIMES } from "./harness/process.ts";
import { startFunctions } from "./harness/broker.ts";
import { Cluster, KV_TOKEN, tail } from "./harness/cluster.ts";
import { type Received, Receiver as Rx } from "./harness/receiver.ts";

const TOKEN = "qstash-test-token-0123456789";
const API_KEYS = JSON.stringify([{ key: TOKEN, name: "app", admin: true }]);
const ENV = {
  MQ_LEASE_TTL_MS: "1500",
  MQ_LEASE_MARGIN_MS: "300",
  MQ_REPLICATION_MODE: "SYNC",
  MQ_IN_SYNC_REPLICAS: "2",
  MQ_HA_HEARTBEAT_MS: "200",
  MQ_HA_HOUSEKEEPING_MS: "2000",
  MQ_HA_SLAVE_TIMEOUT_MS: "2000",
  MQ_HA_METADATA_SYNC_MS: "300",
  MQ_SEGMENT_BYTES: String(4 * 1024 * 1024),
  MQ_WEBHOOK_ALLOW_HOSTS: "127.0.0.1",
  MQ_API_KEYS: API_KEYS,
};
const auth = { authorization: `Bearer ${TOKEN}` };
const text = (r: Received) => new TextDecoder().decode(r.body);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function keysAt(url: string): Promise<{ current: string; next: string }> {
  const res = await fetch(`${url}/v2/keys`, { headers: auth });
  assert.equal(res.status, 200, await res.clone().text());
  return await res.json();
}

for (const runtime of RUNTIMES) {
  // The client leaves the (empty) bodies of answers it does not parse unread: not ours.
  Deno.test({
    name:
      `QStash on ${runtime}: split-mode functions in front of a replicated group; keys survive a failover`,
    sanitizeResources: false,
  }, async (t) => {
    await using rx = new Rx();
    await using cluster = new Cluster(runtime, 3, ENV);
    await cluster.startKv();
    await Promise.all([0, 1, 2].map((i) => cluster.start(i)));
    const master = await cluster.waitForMaster(2);
    await using functions = await startFunctions(runtime, {
      kvUrl: cluster.kvUrl,
      kvToken: KV_TOKEN,
      env: { MQ_API_KEYS: API_KEYS, MQ_BROKER_TOKEN: TOKEN },
    });
    const q = new Client({ baseUrl: functions.url, token: TOKEN, retry: false });
    const keys = await keysAt(functions.url);
    assert.match(keys.current, /^sig_/);
    assert.deepEqual(await keysAt(cluster.replicas[master].proc!.url), keys);
    // Strict: the current key alone, so a delivery signed with any other key fails.
    const receiver = new Receiver({ currentSigningKey: keys.current, nextSigningKey: "sig_none" });
    const letters = async () => (await q.dlq.listMessages()).messages;
    const verify = (r: Received, url: string) =>
      receiver.verify({ signature: r.headers["upstash-signature"], body: text(r), url });

    try {
      await t.step("publish through the functions: delivered, signed, verified", async () => {
        const url = rx.on("/before", () => new Response());
        const res = await q.publishJSON({ url, body: { n: 1 } });
        await rx.until(() => rx.at("/before").length >= 1, 15_000, "delivery");
        const r = rx.at("/before")[0];
        assert.equal(r.headers["upstash-message-id"], res.messageId);
        assert.equal(await verify(r, url), true);
        await assert.rejects(
          receiver.verify({ signature: r.headers["upstash-signature"], body: "x", url }),
        );
      });

      await t.step("the other QstashApi calls over HTTP: checks, schedules, DLQ", async () => {
        const refused = await q.publish({ url: "http://10.0.0.1/x", body: "x" }).then(
          () => undefined,
          (e) => e as { status?: number },
        );
        assert.equal(refused?.status, 400);
        const url = rx.on("/tick", () => new Response());
        const { scheduleId } = await q.schedules.create({
          destination: url,
          cron: "0 0 1 1 *",
          body: "tick",
        });
        const s = await q.schedules.get(scheduleId);
        assert.equal(s.destination, url);
        assert.equal(s.body, "tick");
        await q.schedules.delete(scheduleId);
      });

      await t.step("DLQ over HTTP: a deleted and a retried letter leave the list", async () => {
        let fail = true;
        const url = rx.on("/dead", () => new Response(null, { status: fail ? 500 : 200 }));
        const a = await q.publish({ url, body: "a", retries: 0 });
        const b = await q.publish({ url, body: "b", retries: 0 });
        const deadline = performance.now() + 15_000;
        let found = await letters();
        while (![a, b].every((m) => found.some((l) => l.messageId === m.messageId))) {
          assert.ok(performance.now() < deadline, "not dead-lettered");
          await sleep(100);
          found = await letters();
        }
        await q.dlq.delete(found.find((l) => l.messageId === a.messageId)!.dlqId);
        fail = false;
        await q.dlq.retry(found.find((l) => l.messageId === b.messageId)!.dlqId);
        const bs = () => rx.at("/dead").filter((r) => text(r) === "b").length;
        await rx.until(() => bs() >= 2, 15_000, "redelivery");
        assert.deepEqual(await letters(), []);
      });

      await t.step(
        "SIGKILL the master: the promoted slave signs with the same key, keeps the DLQ tombstones",
        async () => {
          await sleep(1500); // slaves copy the metadata every 300 ms here
          await cluster.kill(master);
          const url = rx.on("/after", () => new Response());
          const deadline = performance.now() + 20_000;
          for (;;) {
            const ok = await q.publish({ url, body: "after failover" }).then(
              () => true,
              () => false,
            );
            if (ok) break;
            assert.ok(performance.now() < deadline, "no publish reached a new master");
            await sleep(100);
          }
          await rx.until(() => rx.at("/after").length >= 1, 15_000, "delivery after failover");
          for (const r of rx.at("/after")) assert.equal(await verify(r, url), true);
          const next = await cluster.waitForMaster(1, 20_000, master);
          assert.deepEqual(await keysAt(cluster.replicas[next].proc!.url), keys);
          assert.deepEqual(await keysAt(functions.url), keys);
          // The DLQ tombstones came along: the deleted and retried letters stay gone.
          assert.deepEqual(await letters(), []);
        },
      );
    } catch (err) {
      const logs = cluster.replicas.map((r) => `--- ${r.id}\n${tail(r.proc)}`).join("\n");
      throw new Error(
        `${(err as Error).message}\nfunctions:\n${
          functions.child.stderr.join("").slice(-3000)
        }\n${logs}`,
      );
    }
  });
}
