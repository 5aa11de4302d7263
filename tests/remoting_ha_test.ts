// The remoting front end in a replicated group (haMode cluster), real processes on Deno and
// Bun: every replica's NameServer names the live master as brokerId 0 and the slave under
// its id; a send to the slave is refused with SERVICE_NOT_AVAILABLE (RocketMQ's answer for a
// send to a slave); after the master is killed the route names the new master, which takes
// the send.
import assert from "node:assert/strict";
import { Cluster, KV_TOKEN, tail } from "./harness/cluster.ts";
import { RUNTIMES } from "./harness/process.ts";
import { type BrokerProcess, startBroker } from "./harness/broker.ts";
import { json, RawRemoting } from "./support/remoting_client.ts";
import { RequestCode, ResponseCode } from "../functions/remoting/codes.ts";

const ENV = {
  MQ_LEASE_TTL_MS: "1500",
  MQ_LEASE_MARGIN_MS: "300",
  MQ_REPLICATION_MODE: "ASYNC",
  MQ_HA_HEARTBEAT_MS: "200",
  MQ_HA_METADATA_SYNC_MS: "300",
  MQ_ROUTE_HEARTBEAT_MS: "300",
  MQ_SEGMENT_BYTES: String(4 * 1024 * 1024),
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function listening(b: BrokerProcess): { namesrv: string; remoting: string } {
  const line = b.child.lines.find((l) => l.includes('"event":"listening"'))!;
  return JSON.parse(line);
}

interface Route {
  brokerDatas: { cluster: string; brokerName: string; brokerAddrs: Record<string, string> }[];
  queueDatas: { writeQueueNums: number }[];
}

async function route(namesrv: string, topic: string): Promise<Route | string> {
  const c = await RawRemoting.connect(namesrv);
  try {
    const r = await c.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, { topic });
    return r.code === ResponseCode.SUCCESS ? json(r) as Route : `${r.code} ${r.remark}`;
  } finally {
    await c.close();
  }
}

/** Polls a NameServer until its route for `topic` satisfies `ok`. */
async function waitRoute(namesrv: string, topic: string, ok: (r: Route) => boolean) {
  let last: Route | string = "";
  for (let i = 0; i < 100; i++) {
    last = await route(namesrv, topic);
    if (typeof last !== "string" && ok(last)) return last;
    await sleep(100);
  }
  throw new Error(`route of ${topic} at ${namesrv}: ${JSON.stringify(last)}`);
}

async function send(remoting: string, body: string) {
  const c = await RawRemoting.connect(remoting);
  try {
    return await c.request(RequestCode.SEND_MESSAGE, {
      producerGroup: "PG",
      topic: "HaT",
      queueId: 0,
      sysFlag: 0,
      bornTimestamp: Date.now(),
      properties: "",
    }, new TextEncoder().encode(body));
  } finally {
    await c.close();
  }
}

for (const runtime of RUNTIMES) {
  Deno.test(`remoting HA on ${runtime}: the NameServer names the master and the slave, a slave refuses sends, a failover moves the route`, async () => {
    await using cluster = new Cluster(runtime, 2, ENV);
    await cluster.startKv();
    await Promise.all([0, 1].map((i) => cluster.start(i)));
    const first = await cluster.waitForMaster(1);
    const slave = 1 - first;
    const m = listening(cluster.replicas[first].proc!);
    const s = listening(cluster.replicas[slave].proc!);
    try {
      await cluster.replicas[first].proc!.client.upsertTopic("HaT", {
        readQueueNums: 2,
        writeQueueNums: 2,
      });
      // Both NameServers: master as 0, the slave under its id (0 is the master's: a slave
      // whose own id is 0 takes the master's).
      const slaveKey = String(slave === 0 ? first : slave);
      for (const ns of [m.namesrv, s.namesrv]) {
        const r = await waitRoute(
          ns,
          "HaT",
          (r) =>
            r.brokerDatas[0]?.brokerAddrs["0"] === m.remoting &&
            r.brokerDatas[0]?.brokerAddrs[slaveKey] === s.remoting,
        );
        assert.equal(r.queueDatas[0].writeQueueNums, 2);
      }
      const refused = await send(s.remoting, "to-slave");
      assert.equal(refused.code, ResponseCode.SERVICE_NOT_AVAILABLE, refused.remark);
      const sent = await send(m.remoting, "to-master");
      assert.equal(sent.code, ResponseCode.SUCCESS, sent.remark);
      // ASYNC replication: the send is acknowledged before the slave has it. Killed before
      // the copy, the master takes the message with it (or leaves a slave too far behind
      // to be elected), and that is not what this test is about.
      const masterOffset = (await cluster.status(first))!.maxOffset;
      for (let i = 0; (await cluster.status(slave))?.maxOffset !== masterOffset; i++) {
        assert.ok(i < 200, "the slave never caught up with the master");
        await sleep(50);
      }

      // Failover: the old slave's NameServer now names itself as master.
      await cluster.kill(first);
      await cluster.waitForMaster(0, 20_000, first);
      await waitRoute(s.namesrv, "HaT", (r) => r.brokerDatas[0]?.brokerAddrs["0"] === s.remoting);
      let after;
      for (let i = 0; i < 50; i++) {
        after = await send(s.remoting, "after-failover");
        if (after.code === ResponseCode.SUCCESS) break;
        await sleep(100);
      }
      assert.equal(after?.code, ResponseCode.SUCCESS, after?.remark);
      const got = await cluster.replicas[slave].proc!.client.pull("HaT", 0, { offset: 0 });
      assert.deepEqual(
        got.messages.map((x) => x.body),
        ["to-master", "after-failover"],
      );
    } catch (err) {
      const logs = cluster.replicas.map((r) => `--- ${r.id}\n${tail(r.proc)}`).join("\n");
      throw new Error(`${(err as Error).message}\n${logs}`);
    }
  });
}

for (const runtime of RUNTIMES) {
  Deno.test(`remoting NameServer on ${runtime}: two lone brokers sharing a KV route table answer each other's topics`, async () => {
    await using cluster = new Cluster(runtime, 0, {});
    await cluster.startKv();
    const env = (name: string) => ({
      MQ_KV: cluster.kvUrl,
      DENO_KV_ACCESS_TOKEN: KV_TOKEN,
      MQ_BROKER_NAME: name,
      MQ_ROUTE_HEARTBEAT_MS: "200",
      MQ_AUTO_CREATE_TOPIC: "false",
    });
    await using a = await startBroker(runtime, { env: env("broker-a") });
    await using b = await startBroker(runtime, { env: env("broker-b") });
    await b.client.upsertTopic("OnlyB", { readQueueNums: 3, writeQueueNums: 3 });
    await a.client.upsertTopic("Both", {});
    await b.client.upsertTopic("Both", {});
    const [la, lb] = [listening(a), listening(b)];
    const r = await waitRoute(la.namesrv, "OnlyB", (r) => r.brokerDatas.length === 1);
    assert.deepEqual(r.brokerDatas[0], {
      cluster: "DefaultCluster",
      brokerName: "broker-b",
      brokerAddrs: { "0": lb.remoting },
    });
    assert.equal(r.queueDatas[0].writeQueueNums, 3);
    const both = await waitRoute(lb.namesrv, "Both", (r) => r.brokerDatas.length === 2);
    assert.deepEqual(
      both.brokerDatas.map((d) => d.brokerAddrs["0"]).sort(),
      [la.remoting, lb.remoting].sort(),
    );
  });
}
