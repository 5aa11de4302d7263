// The remoting NameServer over the route table when a topic is spread over broker groups
// (docs/cluster.md "Front ends in a cluster"): GET_ROUTEINFO_BY_TOPIC answers one QueueData
// and BrokerData per group of the cluster holding the topic, each with its own queue
// counts and perm (a draining group is read-only), and never a group of another cluster
// that shares the KV store and has a topic of the same name.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { loneRoutes, type NamesrvRoute } from "../runtime/remoting_ha.ts";
import { pickPlatform } from "../runtime/platform/pick.ts";
import { encodeRoute, ROUTES_PREFIX } from "../runtime/protocol/routes.ts";
import { PERM_READ, PERM_WRITE } from "../runtime/protocol/types.ts";
import { namesrvHandler } from "../functions/remoting/namesrv.ts";
import { RemotingAuth } from "../functions/remoting/auth.ts";
import { Authenticator } from "../functions/auth.ts";
import { RequestCode, ResponseCode } from "../functions/remoting/codes.ts";
import type { RemotingCommand } from "../functions/remoting/codec.ts";

const RW = PERM_READ | PERM_WRITE;

Deno.test("NameServer route of a topic spread over two groups", async () => {
  const dir = mkdtempSync(`${tmpdir()}/mq-namesrv-test-`);
  const kv = await (await pickPlatform()).openKv(`${dir}/kv.sqlite`, {});
  try {
    const entry = (cluster: string, name: string, port: number, perm: number) =>
      kv.set(
        [...ROUTES_PREFIX, cluster, name],
        encodeRoute({
          cluster,
          brokerName: name,
          address: `127.0.0.1:${port}`,
          remotingAddress: `127.0.0.1:${port + 1}`,
          epoch: 1,
          topics: [{ name: "orders", readQueueNums: 2, writeQueueNums: 2, perm }],
          updatedAtMs: Date.now(),
        }),
      );
    await entry("C1", "g-b", 2000, PERM_READ); // draining: read-only there
    await entry("C2", "other", 3000, RW); // another cluster on the same KV
    const self: NamesrvRoute = {
      cluster: "C1",
      brokerName: "g-a",
      brokerAddrs: { "0": "127.0.0.1:1001" },
      topics: [{ name: "orders", readQueueNums: 4, writeQueueNums: 4, perm: RW }],
    };
    const handler = namesrvHandler({
      routes: () =>
        loneRoutes({
          kv: () => Promise.resolve(kv),
          cluster: "C1",
          brokerName: "g-a",
          routeExpiryMs: 60_000,
          nowMs: () => Date.now(),
        }, () => Promise.resolve(self)),
      defaultTopicQueueNums: 4,
      auth: new RemotingAuth([], await Authenticator.create([])),
    });
    const req: RemotingCommand = {
      code: RequestCode.GET_ROUTEINFO_BY_TOPIC,
      language: "JAVA",
      version: 0,
      opaque: 1,
      flag: 0,
      extFields: { topic: "orders" },
      serializeType: 0,
    };
    const res = await handler(req, {} as never) as RemotingCommand;
    assert.equal(res.code, ResponseCode.SUCCESS, res.remark);
    const route = JSON.parse(new TextDecoder().decode(res.body));
    assert.deepEqual(
      route.queueDatas.map((q: Record<string, unknown>) => [q.brokerName, q.readQueueNums, q.perm]),
      [["g-a", 4, RW], ["g-b", 2, PERM_READ]],
    );
    assert.deepEqual(
      route.brokerDatas.map((b: { brokerAddrs: Record<string, string> }) => b.brokerAddrs["0"]),
      ["127.0.0.1:1001", "127.0.0.1:2001"],
    );
  } finally {
    kv.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
