// What the cluster router asks of a broker group over its HTTP link (functions/broker_link.ts),
// as split-mode functions reach real groups: two in-process Brokers, each behind its own
// HTTP app on a loopback port. A joining group gets the template's consumer group, webhook
// subscription (same secret, read with revealSecrets) and transaction check over HTTP
// (topic_join_copy.ts); ClusterQstash puts both groups on one set of signing keys with
// PUT /v1/qstash/keys. A drain moves a cron schedule between groups over the same links
// (schedule_move.ts: export, import, binary body intact).
import assert from "node:assert/strict";
import { withBroker } from "./support/broker_testing.ts";
import type { Broker } from "../runtime/broker.ts";
import type { GroupLink } from "../runtime/cluster/route_source.ts";
import { copyTopicConsumers } from "../runtime/cluster/topic_join_copy.ts";
import { ClusterQstash } from "../runtime/cluster/qstash_router.ts";
import { moveSchedules } from "../runtime/cluster/schedule_move.ts";
import { createApp } from "../functions/app.ts";
import { TEST_LIMITS } from "../functions/testing.ts";
import { brokerLink } from "../functions/broker_link.ts";

const ENV = { MQ_WEBHOOK_ALLOW_HOSTS: "127.0.0.1" };

async function serveBroker(broker: Broker) {
  const app = await createApp({
    broker: { get: () => Promise.resolve(broker), failed() {} },
    apiKeys: [],
    limits: { ...TEST_LIMITS, maxMessageSize: 65536 },
    log: () => {},
    qstash: (b) => (b as unknown as Broker).qstash,
  });
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, app.fetch);
}

Deno.test(
  {
    name: "join copy and QStash keys over the groups' HTTP links",
    // The body-read deadline wheel (functions/body.ts) fires once after the last request.
    sanitizeOps: false,
    sanitizeResources: false,
  },
  () =>
    withBroker(
      { ...ENV, MQ_BROKER_NAME: "g-a" },
      (a) =>
        withBroker({ ...ENV, MQ_BROKER_NAME: "g-b" }, async (b) => {
          const servers = [await serveBroker(a), await serveBroker(b)];
          try {
            const link = brokerLink(undefined);
            const links: GroupLink[] = servers.map((s, i) => {
              const url = `http://127.0.0.1:${s.addr.port}`;
              return { name: ["g-a", "g-b"][i], url, epoch: 1, client: link.connect(url) };
            });
            await a.upsertTopic("t", {});
            await b.upsertTopic("t", {});
            await a.upsertGroup("workers", { retryMaxTimes: 3 });
            const sub = await a.upsertSubscription("hook", {
              topic: "t",
              url: "http://127.0.0.1:9/hook",
            });
            const check = await a.setTransactionCheck("txp", { url: "http://127.0.0.1:9/check" });

            await copyTopicConsumers(links[0], links[1], "t");
            assert.equal((await b.getGroup("workers")).retryMaxTimes, 3);
            const [copied] = await b.listSubscriptions({ revealSecrets: true });
            assert.deepEqual([copied.group, copied.secrets], ["hook", sub.secrets]);
            assert.deepEqual(await b.listTransactionChecks({ revealSecrets: true }), [check]);
            // Masked unless asked: the plain listing never shows a secret.
            const masked = await links[0].client.listSubscriptions();
            assert.notDeepEqual(masked[0].secrets, sub.secrets);

            const qstash = new ClusterQstash({
              groups: () => Promise.resolve(links),
            }, link.qstash);
            const before = [await a.qstash.qstashSigningKeys(), await b.qstash.qstashSigningKeys()];
            assert.notDeepEqual(before[0], before[1]);
            const keys = await qstash.qstashSigningKeys();
            assert.deepEqual(keys, before[0]); // a tie: the first group by name
            assert.deepEqual(await b.qstash.qstashSigningKeys(), keys);
            const rotated = await qstash.rotateQstashSigningKeys();
            assert.equal(rotated.current, keys.next);
            assert.deepEqual(await a.qstash.qstashSigningKeys(), rotated);
            assert.deepEqual(await b.qstash.qstashSigningKeys(), rotated);

            const bytes = new Uint8Array([0, 255, 1, 128, 10]);
            const cron = await a.createSchedule({
              topic: "t",
              cron: "0 0 1 1 *",
              message: { body: bytes, keys: ["k1"], contentType: "application/octet-stream" },
            });
            const whole = await a.exportSchedule(cron.id);
            assert.deepEqual(await moveSchedules(links[0], links[1], "t"), [cron.id]);
            assert.deepEqual(await a.listSchedules(), []);
            assert.deepEqual(await b.exportSchedule(cron.id), whole);
          } finally {
            for (const s of servers) await s.shutdown();
          }
        }),
    ),
);
