// Replication and failover (issue #7) with real processes: a KV Connect host and three
// brokers (haMode cluster) on loopback, under Deno and under Bun. Failures are real:
// SIGKILL, SIGSTOP/SIGCONT, the KV host killed. Every claim is checked on the data the
// surviving master serves over HTTP.
import assert from "node:assert/strict";
import { BrokerError, messageBody, MqClient } from "../client/mod.ts";
import type { ProduceResult, WireMessage } from "../runtime/protocol/types.ts";
import { Cluster, KV_TOKEN, tail } from "./harness/cluster.ts";
import { RUNTIMES } from "./harness/process.ts";
import { startFunctions } from "./harness/broker.ts";

const TTL_MS = 1500;
const ENV = {
  MQ_LEASE_TTL_MS: String(TTL_MS),
  MQ_LEASE_MARGIN_MS: "300",
  MQ_REPLICATION_MODE: "SYNC",
  MQ_IN_SYNC_REPLICAS: "2",
  MQ_FLUSH_DISK_TYPE: "SYNC_FLUSH",
  MQ_HA_HEARTBEAT_MS: "200",
  MQ_HA_HOUSEKEEPING_MS: "2000",
  MQ_HA_SLAVE_TIMEOUT_MS: "2000",
  MQ_HA_METADATA_SYNC_MS: "300",
  // Small segments: they roll during the test, and three replicas on one disk do not
  // zero-fill 1 GiB each.
  MQ_SEGMENT_BYTES: String(4 * 1024 * 1024),
};
const TOPIC = "Orders";
const QUEUES = 4;
const enc = new TextEncoder();
const dec = new TextDecoder();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Acked {
  seq: number;
  result: ProduceResult;
}

/**
 * One sequential producer that follows the master: each message is retried (same seq,
 * same body) until some master acknowledges it. Retried seqs are remembered: only they
 * may appear twice.
 */
class Producer {
  readonly acked: Acked[] = [];
  readonly retried = new Set<number>();
  #seq = 0;
  #running = true;
  #loop: Promise<void>;
  lastAckMs = performance.now();

  constructor(readonly cluster: Cluster) {
    this.#loop = this.#run();
  }

  async #run() {
    while (this.#running) {
      const seq = this.#seq;
      const master = await this.#master();
      if (master === undefined) {
        await sleep(20);
        continue;
      }
      try {
        const result = await master.produce(TOPIC, {
          body: enc.encode(`seq-${seq}`),
          queueId: seq % QUEUES,
          keys: [`k${seq}`],
        });
        this.acked.push({ seq, result });
        this.lastAckMs = performance.now();
        this.#seq++;
      } catch (err) {
        if (!(err instanceof BrokerError) && !(err instanceof TypeError)) throw err;
        this.retried.add(seq);
        await sleep(20);
      }
    }
  }

  async #master(): Promise<MqClient | undefined> {
    const all = await this.cluster.statuses();
    const i = all.findIndex((s) => s?.role === "master");
    const proc = i < 0 ? undefined : this.cluster.replicas[i].proc;
    return proc ? new MqClient({ baseUrl: proc.url }) : undefined;
  }

  async waitForAcks(n: number, timeoutMs = 20_000) {
    const target = this.acked.length + n;
    const deadline = performance.now() + timeoutMs;
    while (this.acked.length < target) {
      if (performance.now() > deadline) {
        throw new Error(`Only ${this.acked.length}/${target} acks in ${timeoutMs} ms`);
      }
      await sleep(10);
    }
  }

  async stop() {
    this.#running = false;
    await this.#loop;
  }
}

/** Every message of TOPIC on the replica, per queue, in queue order. */
async function readAll(client: MqClient): Promise<WireMessage[][]> {
  const out: WireMessage[][] = [];
  for (let q = 0; q < QUEUES; q++) {
    const msgs: WireMessage[] = [];
    for (let offset = 0;;) {
      const got = await client.pull(TOPIC, q, { offset, max: 1000 });
      msgs.push(...got.messages);
      if (got.messages.length === 0 || got.nextOffset >= got.maxOffset) break;
      offset = got.nextOffset;
    }
    out.push(msgs);
  }
  return out;
}

/** Every acknowledged message is there, bodies intact, in order per queue; a seq shows up
 * twice only if its request was retried. */
function checkAcked(queues: WireMessage[][], producer: Producer) {
  const seqsByQueue = queues.map((msgs) =>
    msgs.map((m) => {
      const text = dec.decode(messageBody(m));
      assert.equal(text, `seq-${m.keys?.[0]?.slice(1)}`, `body of ${m.messageId} corrupted`);
      return Number(text.slice(4));
    })
  );
  const byId = new Map<string, number>();
  for (const msgs of queues) {
    for (const m of msgs) byId.set(m.messageId, Number(m.keys?.[0]?.slice(1)));
  }
  for (const { seq, result } of producer.acked) {
    assert.equal(byId.get(result.messageId), seq, `acknowledged seq ${seq} is missing`);
  }
  for (const [q, seqs] of seqsByQueue.entries()) {
    const seen = new Set<number>();
    let last = -1;
    for (const seq of seqs) {
      if (seen.has(seq)) {
        assert.ok(
          producer.retried.has(seq),
          `seq ${seq} duplicated in queue ${q} but never retried`,
        );
        continue;
      }
      seen.add(seq);
      assert.ok(seq > last, `queue ${q}: seq ${seq} after ${last}`);
      last = seq;
    }
  }
}

/** Waits until every running replica holds as much log as the master (a slave's epoch
 * file names the master's epoch only once that epoch has written something). */
async function converged(cluster: Cluster, timeoutMs = 15_000) {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const all = (await cluster.statuses()).filter((s) => s !== undefined);
    const m = all.find((s) => s.role === "master");
    if (m && all.every((s) => s.maxOffset === m.maxOffset && s.epoch <= m.epoch)) return;
    if (performance.now() > deadline) {
      throw new Error(`replicas did not converge: ${JSON.stringify(all)}`);
    }
    await sleep(50);
  }
}

function masterClient(cluster: Cluster, id: number): MqClient {
  return new MqClient({ baseUrl: cluster.replicas[id].proc!.url });
}

for (const runtime of RUNTIMES) {
  Deno.test(`replication on ${runtime}: SIGKILL the master under SYNC load, 10 failovers, nothing acknowledged is lost`, async () => {
    await using cluster = new Cluster(runtime, 3, ENV);
    await cluster.startKv();
    await Promise.all([0, 1, 2].map((i) => cluster.start(i)));
    let master = await cluster.waitForMaster(2);
    const producer = new Producer(cluster);
    const failovers: number[] = [];
    try {
      for (let cycle = 0; cycle < 10; cycle++) {
        await producer.waitForAcks(15);
        const killedAt = performance.now();
        await cluster.kill(master);
        const before = producer.acked.length;
        while (producer.acked.length === before) {
          if (performance.now() - killedAt > 20_000) throw new Error("no failover in 20 s");
          await sleep(5);
        }
        failovers.push((producer.lastAckMs - killedAt) / 1000);
        await cluster.start(master);
        master = await cluster.waitForMaster(2);
      }
      await producer.waitForAcks(10);
    } catch (err) {
      const logs = cluster.replicas.map((r) => `--- ${r.id}\n${tail(r.proc)}`).join("\n");
      throw new Error(`${(err as Error).message}\n${logs}`);
    } finally {
      await producer.stop();
    }
    console.log(
      `${runtime}: ${failovers.length} failovers, ${producer.acked.length} acked, ${producer.retried.size} retried; failover s: ${
        failovers.map((f) => f.toFixed(2)).join(" ")
      }`,
    );
    // Every acknowledged message is on the master and on every in-sync slave.
    master = await cluster.waitForMaster(2);
    checkAcked(await readAll(masterClient(cluster, master)), producer);
    // Every replica, old masters included (their unacknowledged tails cut at the handshake),
    // ends up holding the master's log.
    await converged(cluster);
    assert.ok(Math.max(...failovers) < TTL_MS / 1000 + 4, `failover too slow: ${failovers}`);
  });

  Deno.test(`replication on ${runtime}: a paused master acknowledges nothing after its lease, then rejoins as slave`, async () => {
    await using cluster = new Cluster(runtime, 3, ENV);
    await cluster.startKv();
    await Promise.all([0, 1, 2].map((i) => cluster.start(i)));
    const old = await cluster.waitForMaster(2);
    const oldClient = masterClient(cluster, old);
    const first = await oldClient.produce(TOPIC, {
      body: enc.encode("seq-0"),
      queueId: 0,
      keys: ["k0"],
    });
    const oldEpoch = (await cluster.status(old))!.epoch;
    cluster.replicas[old].proc!.child.kill("SIGSTOP");
    // A write sent to the paused master is answered only after it wakes up.
    const late = oldClient.produce(TOPIC, { body: enc.encode("late"), queueId: 0 }).then(
      () => "acknowledged",
      (err) => (err as BrokerError).code ?? String(err),
    );
    const next = await cluster.waitForMaster(1, 20_000, old);
    const nextClient = masterClient(cluster, next);
    const second = await nextClient.produce(TOPIC, {
      body: enc.encode("seq-1"),
      queueId: 0,
      keys: ["k1"],
    });
    assert.ok((await cluster.status(next))!.epoch > oldEpoch, "the new master has a higher epoch");
    cluster.replicas[old].proc!.child.kill("SIGCONT");
    assert.equal(
      await late,
      "NOT_LEADER",
      "the paused master acknowledged a write after its lease",
    );
    await assert.rejects(
      oldClient.produce(TOPIC, { body: enc.encode("stale"), queueId: 0 }),
      (err: BrokerError) => err.code === "NOT_LEADER",
    );
    // It follows the new master, holding exactly its log.
    await cluster.waitForMaster(2, 20_000);
    const queue0 = (await readAll(nextClient))[0];
    assert.deepEqual(queue0.map((m) => m.messageId), [first.messageId, second.messageId]);
    await converged(cluster);
  });

  Deno.test(`replication on ${runtime}: a lagging slave is never elected; the old master rejoins after truncation`, async () => {
    await using cluster = new Cluster(runtime, 3, { ...ENV, MQ_REPLICATION_MODE: "ASYNC" });
    await cluster.startKv();
    await Promise.all([0, 1, 2].map((i) => cluster.start(i)));
    const master = await cluster.waitForMaster(2);
    const [lagging, good] = [0, 1, 2].filter((i) => i !== master);
    const client = masterClient(cluster, master);
    await client.produce(TOPIC, { body: enc.encode("seq-0"), queueId: 0, keys: ["k0"] });
    await cluster.kill(lagging);
    const acked: ProduceResult[] = [];
    for (let i = 1; i <= 20; i++) {
      acked.push(
        await client.produce(TOPIC, { body: enc.encode(`seq-${i}`), queueId: 0, keys: [`k${i}`] }),
      );
    }
    // The good slave holds everything; then master and good slave go down together.
    const end = (await cluster.status(master))!.maxOffset;
    for (
      const deadline = performance.now() + 10_000;
      (await cluster.status(good))!.maxOffset < end;
    ) {
      if (performance.now() > deadline) throw new Error("good slave did not catch up");
      await sleep(20);
    }
    // The master publishes its confirm offset (the bar a candidate must reach) with each
    // lease renew (TTL/3): let one pass.
    await sleep(TTL_MS);
    await Promise.all([cluster.kill(master), cluster.kill(good)]);
    await cluster.start(lagging);
    // Alone and behind, it must not lead: wait well past a lease.
    const until = performance.now() + 3 * TTL_MS;
    while (performance.now() < until) {
      assert.notEqual(
        (await cluster.status(lagging))?.role,
        "master",
        "a lagging slave was elected",
      );
      await sleep(100);
    }
    await cluster.start(good);
    const elected = await cluster.waitForMaster(1, 20_000);
    assert.equal(elected, good, "the replica with the whole log leads");
    // The old master comes back and follows.
    await cluster.start(master);
    await cluster.waitForMaster(2, 20_000);
    await converged(cluster);
    const queue0 = (await readAll(masterClient(cluster, good)))[0];
    for (const r of acked) {
      assert.ok(queue0.some((m) => m.messageId === r.messageId), "acked message lost");
    }
  });

  Deno.test(`replication on ${runtime}: KV host down for twice the lease: no write acknowledged without a lease, service resumes`, async () => {
    await using cluster = new Cluster(runtime, 3, ENV);
    await cluster.startKv();
    await Promise.all([0, 1, 2].map((i) => cluster.start(i)));
    const master = await cluster.waitForMaster(2);
    const client = masterClient(cluster, master);
    await client.produce(TOPIC, { body: enc.encode("before"), queueId: 0 });
    await cluster.stopKv();
    const downAt = performance.now();
    let lastAckMs = 0;
    while (performance.now() - downAt < 2 * TTL_MS) {
      try {
        await client.produce(TOPIC, { body: enc.encode("during"), queueId: 1 });
        lastAckMs = performance.now() - downAt;
      } catch (err) {
        assert.ok(err instanceof BrokerError, String(err));
      }
      await sleep(20);
    }
    assert.ok(
      lastAckMs < TTL_MS,
      `a write was acknowledged ${lastAckMs} ms into the outage (lease ${TTL_MS} ms)`,
    );
    await cluster.startKv();
    const resumed = await cluster.waitForMaster(2, 30_000);
    const again = await (masterClient(cluster, resumed)).produce(TOPIC, {
      body: enc.encode("after"),
      queueId: 0,
    });
    assert.ok(again.replicas! >= 2);
  });
}

for (const runtime of RUNTIMES) {
  Deno.test(`replication on ${runtime}: functions in front of the group follow the leader; topics and offsets survive the failover`, async () => {
    await using cluster = new Cluster(runtime, 3, ENV);
    await cluster.startKv();
    await Promise.all([0, 1, 2].map((i) => cluster.start(i)));
    const master = await cluster.waitForMaster(2);
    await using functions = await startFunctions(runtime, {
      kvUrl: cluster.kvUrl,
      kvToken: KV_TOKEN,
    });
    const mq = functions.client;
    await mq.upsertTopic(TOPIC, { readQueueNums: 3, writeQueueNums: 3 });
    const first = await mq.produce(TOPIC, { body: "one", queueId: 2 });
    assert.equal(first.replicas, 2);
    await mq.upsertGroup("billing");
    await mq.commitOffset("billing", TOPIC, 2, 1);
    // Slaves copy the master's metadata every 300 ms here: let a few copies happen.
    await sleep(1500);
    await cluster.kill(master);
    let second: ProduceResult | undefined;
    let attempts = 0;
    const deadline = performance.now() + 20_000;
    while (!second) {
      assert.ok(performance.now() < deadline, "the functions never reached the new master");
      attempts++;
      second = await mq.produce(TOPIC, { body: "two", queueId: 2 }).catch((err) => {
        assert.ok(
          ["NOT_LEADER", "BROKER_UNAVAILABLE", "REPLICAS_NOT_AVAILABLE", "REPLICATION_TIMEOUT"]
            .includes(err.code),
          String(err),
        );
        return undefined;
      });
      if (!second) await sleep(50);
    }
    // The new master knows the topic as created (3 queues, not an auto-created 8) and the
    // group's offset, and holds the first message.
    assert.equal((await mq.getTopic(TOPIC)).readQueueNums, 3);
    assert.equal((await mq.getOffset("billing", TOPIC, 2)).offset, 1);
    const got = await mq.pull(TOPIC, 2, { offset: 0 });
    // A refused write may have been written (a timeout, a lost lease): only a retry repeats.
    const bodies = got.messages.map((m) => m.body);
    assert.equal(bodies[0], "one");
    assert.ok(bodies.length >= 2 && bodies.length <= 1 + attempts, String(bodies));
    assert.ok(bodies.slice(1).every((b) => b === "two"), String(bodies));
  });
}
