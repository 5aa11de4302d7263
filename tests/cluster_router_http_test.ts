// The cluster router over real broker processes and HTTP, as split-mode functions use it:
// one group on Deno and one on Bun, reached with the functions' own broker link. Global ids,
// POP and acks across groups, assignment over the global list (GET …/assignment?queueIds=),
// and a group killed with SIGKILL: produce moves to the live group, reads of the dead
// group's queues fail with a typed error.
import assert from "node:assert/strict";
import { startBroker } from "./harness/broker.ts";
import { brokerLink } from "../functions/broker_link.ts";
import { ClusterClient, type ClusterTopicAdminPort } from "../runtime/cluster/client.ts";
import type {
  ClusterRouteSource,
  GroupLink,
  ResolvedTopicRoute,
} from "../runtime/cluster/route_source.ts";
import { BrokerError } from "../runtime/protocol/errors.ts";
import type { TopicConfig } from "../runtime/protocol/types.ts";

const body = new TextEncoder().encode("over http");

/** Every live link is in the topic, slots in link order; queue counts asked of each group
 * once (the KV source reads them from the groups' registrations, which outlive a kill until
 * they expire). */
function routesOver(links: GroupLink[], dead: Set<string>): ClusterRouteSource {
  const configs = new Map<string, TopicConfig>();
  return {
    groups: () => Promise.resolve(links.filter((l) => !dead.has(l.name))),
    async topic(topic) {
      const groups = [];
      for (const [slot, link] of links.entries()) {
        if (dead.has(link.name)) continue;
        const key = `${link.name}/${topic}`;
        const t = configs.get(key) ?? await link.client.getTopic(topic);
        configs.set(key, t);
        groups.push({ link, slot, state: "active" as const, ...t });
      }
      return { topic, groups, view: { topic, brokerGroups: [], queues: [] } } as ResolvedTopicRoute;
    },
    invalidate() {},
    cacheStats: () => ({ hits: 0, misses: 0 }),
  };
}

Deno.test("ClusterClient over HTTP: a Deno group and a Bun group", async () => {
  await using deno = await startBroker("deno", { env: { MQ_BROKER_NAME: "g-deno" } });
  await using bun = await startBroker("bun", { env: { MQ_BROKER_NAME: "g-bun" } });
  const link = brokerLink(undefined);
  const links: GroupLink[] = [
    {
      name: "g-deno",
      url: deno.url,
      epoch: 0,
      client: link.connect(deno.url) as GroupLink["client"],
    },
    { name: "g-bun", url: bun.url, epoch: 0, client: link.connect(bun.url) as GroupLink["client"] },
  ];
  const dead = new Set<string>();
  const client = new ClusterClient(routesOver(links, dead), {} as ClusterTopicAdminPort, {
    clusterPopPollSliceMs: 100,
  });
  for (const b of [deno, bun]) {
    await b.client.upsertTopic("h", { readQueueNums: 2, writeQueueNums: 2 });
  }
  await client.upsertGroup("hc", { consumeFromWhere: "FIRST_OFFSET" });

  const ids = [];
  for (let i = 0; i < 8; i++) ids.push((await client.produce("h", { body })).queueId);
  assert.deepEqual([...new Set(ids)].sort((a, b) => a - b), [0, 1, 1024, 1025]);
  const got = await client.receive("hc", { topic: "h", max: 8, waitMs: 1000 });
  assert.equal(got.length, 8);
  const acks = await client.ackBatch("hc", got.map((m) => m.receiptHandle));
  assert.ok(acks.every((a) => a.ok));

  for (const c of ["c1", "c2"]) {
    await client.heartbeat("hc", { clientId: c, subscriptions: [{ topic: "h" }] });
  }
  const shares = await Promise.all(["c1", "c2"].map((c) => client.assignment("hc", c, "h")));
  // Queues sort by broker group name, then id (RocketMQ's MessageQueue order): g-bun's
  // (slot 1: 1024, 1025) come before g-deno's (slot 0).
  assert.deepEqual(shares.map((s) => s.queueIds), [[1024, 1025], [0, 1]]);

  const offsets = await client.getOffsets("hc", "h");
  assert.deepEqual(offsets.queues.map((q) => q.queueId), [0, 1, 1024, 1025]);

  await bun.kill();
  // A send on a pooled connection the dead process left may fail with an unknown outcome
  // (requestSent "unknown": the router does not send it elsewhere, reliability.md P4); the
  // group is then in backoff and every later send goes to g-deno.
  const after: number[] = [];
  let unknown = 0;
  for (let i = 0; after.length < 4 && i < 8; i++) {
    try {
      after.push((await client.produce("h", { body })).queueId);
    } catch (e) {
      assert.ok(e instanceof BrokerError && e.extensions.requestSent === "unknown", String(e));
      unknown++;
    }
  }
  assert.ok(unknown <= 1, `at most one outcome-unknown send: ${unknown}`);
  assert.ok(after.length === 4 && after.every((q) => q < 1024), `all on g-deno: ${after}`);
  await assert.rejects(client.pull("h", 1024, { offset: 0 }), (e) => e instanceof Error);
  dead.add("g-bun");
  await assert.rejects(
    client.pull("h", 1024, { offset: 0 }),
    (e) => e instanceof BrokerError && e.code === "QUEUE_NOT_FOUND",
  );
});
