// The lease rules, one table run against both coordination backends: Deno KV over KV
// Connect (a host in this process) and etcd v3 (a real etcd process; skipped, saying why,
// when etcd is not installed). Each backend is reached through Platform.openKv, as
// brokers reach it, and every keeper has its own client. Real clocks, short leases.
import assert from "node:assert/strict";
import process from "node:process";
import { startKvHost } from "../../tools/kv_host/kv_connect_host.ts";
import { ETCD_SKIP_REASON, startEtcd } from "../../tests/harness/etcd.ts";
import { stablePort } from "../../tools/cluster/ports.ts";
import type { KvPort } from "../platform/kv_port.ts";
import { pickPlatform } from "../platform/pick.ts";
import { type LeaseClock, LeaseKeeper, type LeaseSettings } from "./lease.ts";
import { KvLeaseStore, type LeaseRecord, type LeaseStore } from "./lease_store.ts";

const platform = await pickPlatform();
process.env.DENO_KV_ACCESS_TOKEN ??= "lease-backends-test-token";
const TOKEN = process.env.DENO_KV_ACCESS_TOKEN;

const TTL = 1000;
const MARGIN = 200;
const POLL = 100;
const SETTINGS: Partial<LeaseSettings> = {
  leaseTtlMs: TTL,
  leaseSafetyMarginMs: MARGIN,
  leasePollIntervalMs: POLL,
};
/** A poll step's round trips and timer lateness on a busy machine, ms. */
const STEP_SLACK_MS = 300;
const SAMPLE_MS = 5;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const clock: LeaseClock = {
  monotonicMs: () => performance.now(),
  wallMs: () => Date.now(),
  setTimer(ms, fn) {
    const t = setTimeout(fn, ms);
    return () => clearTimeout(t);
  },
};

interface RunningStore {
  /** What Platform.openKv takes. */
  url: string;
  /** The store is unreachable for `ms`, then back at the same address with the same data. */
  outage(ms: number): Promise<void>;
  stop(): Promise<void>;
}

interface Backend {
  name: string;
  skip?: string;
  start(): Promise<RunningStore>;
}

const BACKENDS: Backend[] = [
  {
    name: "Deno KV (KV Connect)",
    async start() {
      let host = await startKvHost({
        serve: platform.serve,
        token: TOKEN,
        port: await stablePort(),
      });
      return {
        url: host.url,
        async outage(ms) {
          const { port, databaseId, store } = host;
          await host.close();
          await sleep(ms);
          host = await startKvHost({
            serve: platform.serve,
            token: TOKEN,
            port,
            databaseId,
            store,
          });
        },
        stop: () => host.close(),
      };
    },
  },
  {
    name: "etcd v3",
    skip: ETCD_SKIP_REASON,
    async start() {
      const etcd = await startEtcd();
      return {
        url: etcd.url,
        async outage(ms) {
          await etcd.kill();
          await sleep(ms);
          await etcd.restart();
        },
        stop: () => etcd[Symbol.asyncDispose](),
      };
    },
  },
];

/** A keeper's store that can be cut off from the backend: every call then fails. */
class Partitionable implements LeaseStore {
  cut = false;
  constructor(readonly inner: LeaseStore) {}
  #gate<T>(call: () => Promise<T>): Promise<T> {
    return this.cut ? Promise.reject(new Error("partitioned")) : call();
  }
  readLease = (g: string) => this.#gate(() => this.inner.readLease(g));
  writeLease = (g: string, v: string | null, r: LeaseRecord) =>
    this.#gate(() => this.inner.writeLease(g, v, r));
  publishReplica: LeaseStore["publishReplica"] = (g, s) =>
    this.#gate(() => this.inner.publishReplica(g, s));
  readReplicas = (g: string) => this.#gate(() => this.inner.readReplicas(g));
  removeReplica = (g: string, id: number) => this.#gate(() => this.inner.removeReplica(g, id));
}

interface Node {
  id: number;
  kv: KvPort;
  store: Partitionable;
  keeper: LeaseKeeper;
  acquired: { epoch: number; atMs: number }[];
}

class Group implements AsyncDisposable {
  readonly nodes: Node[] = [];
  constructor(readonly url: string, readonly brokerGroup: string) {}

  async add(id: number): Promise<Node> {
    const kv = await platform.openKv(this.url, { accessToken: TOKEN });
    const store = new Partitionable(new KvLeaseStore(kv));
    const node: Node = { id, kv, store, keeper: undefined!, acquired: [] };
    node.keeper = new LeaseKeeper({
      brokerGroup: this.brokerGroup,
      brokerId: id,
      address: `127.0.0.1:${9000 + id}`,
      store,
      clock,
      eligibility: () => ({ epoch: 0, maxOffset: 0, inSync: true }),
      settings: SETTINGS,
      onAcquired: ({ epoch }) => node.acquired.push({ epoch, atMs: performance.now() }),
    });
    node.keeper.start();
    this.nodes.push(node);
    return node;
  }

  leaders(): Node[] {
    return this.nodes.filter((n) => n.keeper.isLeader());
  }

  /** Samples every SAMPLE_MS until `ok()`; at most one leader at every sample. */
  async waitFor(what: string, ok: () => boolean, withinMs: number): Promise<number> {
    const started = performance.now();
    for (;;) {
      if (this.leaders().length > 1) {
        assert.fail(`two leaders at once (${what}): ${this.#explain()}`);
      }
      if (ok()) return performance.now() - started;
      if (performance.now() - started > withinMs) assert.fail(`Not within ${withinMs} ms: ${what}`);
      await sleep(SAMPLE_MS);
    }
  }

  /** Each leader's epoch, time to its deadline and acquisitions, and how far the wall clock
   * moved against the monotonic one since the group started (a step would explain it). */
  #explain(): string {
    const now = performance.now();
    const leaders = this.leaders().map((n) => {
      const h = n.keeper.holding();
      const got = n.acquired.map((a) => `e${a.epoch}@${(a.atMs - now).toFixed(0)}ms`).join(",");
      return `broker ${n.id} epoch ${h?.epoch} deadline in ${
        h ? (h.deadlineMonotonicMs - now).toFixed(0) : "?"
      } ms, acquired ${got}`;
    });
    const drift = Date.now() - performance.now() - this.#wallMinusMono;
    return `${leaders.join("; ")}; wall clock moved ${drift.toFixed(1)} ms against monotonic`;
  }

  readonly #wallMinusMono = Date.now() - performance.now();

  /** Every epoch was acquired by exactly one broker, and epochs went up one at a time. */
  checkEpochs(): number[] {
    const events = this.nodes.flatMap((n) => n.acquired.map((a) => ({ ...a, id: n.id })))
      .sort((a, b) => a.atMs - b.atMs);
    const holders = new Map<number, Set<number>>();
    for (const e of events) holders.set(e.epoch, (holders.get(e.epoch) ?? new Set()).add(e.id));
    for (const [epoch, ids] of holders) {
      assert.equal(ids.size, 1, `epoch ${epoch} held by brokers ${[...ids]}`);
    }
    const epochs = [...new Set(events.map((e) => e.epoch))];
    epochs.forEach((epoch, i) => assert.equal(epoch, i + 1, `epochs in order: ${epochs}`));
    return epochs;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    for (const n of this.nodes) n.store.cut = false;
    for (const n of this.nodes) await n.keeper.stop();
    for (const n of this.nodes) await n.keeper.whenStoreIdle();
    for (const n of this.nodes) n.kv.close();
  }
}

const RULES: { name: string; run(url: string, store: RunningStore): Promise<void> }[] = [
  {
    name: "compare-and-set refuses a stale write and a second create",
    async run(url) {
      const kv = await platform.openKv(url, { accessToken: TOKEN });
      try {
        const store = new KvLeaseStore(kv);
        const record = { owner: 1, address: "a:1", epoch: 1, expiresAtMs: 1, session: "s1" };
        assert.deepEqual(await store.readLease("cas"), { record: null, version: null });
        const taken = await store.writeLease("cas", null, record);
        assert.ok(taken.ok);
        assert.deepEqual(await store.writeLease("cas", null, { ...record, owner: 2 }), {
          ok: false,
        });
        const renewed = await store.writeLease("cas", taken.version, { ...record, expiresAtMs: 2 });
        assert.ok(renewed.ok);
        const stale = await store.writeLease("cas", taken.version, { ...record, owner: 3 });
        assert.deepEqual(stale, { ok: false }, "a write on a stale version");
        assert.deepEqual(await store.readLease("cas"), {
          record: { ...record, expiresAtMs: 2 },
          version: renewed.version,
        });
      } finally {
        kv.close();
      }
    },
  },
  {
    name: "one holder per epoch; a holder that stops renewing expires and the next takes epoch + 1",
    async run(url) {
      await using group = new Group(url, "expiry");
      for (const id of [1, 2, 3]) await group.add(id);
      await group.waitFor("a leader", () => group.leaders().length === 1, 3 * TTL);
      for (let round = 0; round < 2; round++) {
        const holder = group.leaders()[0];
        const epoch = holder.keeper.epoch!;
        const deadline = holder.keeper.holding()!.deadlineMonotonicMs;
        const stoppedAt = performance.now();
        await holder.keeper.stop(); // a pause: no release, the record stays until it expires
        await group.waitFor("a new leader", () => group.leaders().length === 1, 3 * TTL);
        const next = group.leaders()[0];
        const tookMs = next.acquired.at(-1)!.atMs - stoppedAt;
        assert.equal(next.keeper.epoch, epoch + 1);
        assert.ok(next.acquired.at(-1)!.atMs >= deadline, "never before the old deadline");
        assert.ok(tookMs <= TTL + MARGIN + POLL + STEP_SLACK_MS, `takeover took ${tookMs} ms`);
      }
      assert.deepEqual(group.checkEpochs(), [1, 2, 3]);
    },
  },
  {
    name: "no acknowledgement without a lease: a cut-off holder is not leader from its deadline on",
    async run(url) {
      await using group = new Group(url, "partition");
      for (const id of [1, 2]) await group.add(id);
      await group.waitFor("a leader", () => group.leaders().length === 1, 3 * TTL);
      const holder = group.leaders()[0];
      const epoch = holder.keeper.epoch!;
      holder.store.cut = true;
      const cutAt = performance.now();
      let deadline = holder.keeper.holding()!.deadlineMonotonicMs;
      let leaderPastDeadline = false;
      await group.waitFor("the holder steps down", () => {
        deadline = holder.keeper.holding()?.deadlineMonotonicMs ?? deadline;
        const leader = holder.keeper.isLeader(); // what the broker asks before acknowledging
        if (leader && performance.now() >= deadline) leaderPastDeadline = true;
        return !leader;
      }, 2 * TTL);
      assert.equal(leaderPastDeadline, false);
      assert.ok(deadline - cutAt <= TTL, `${deadline - cutAt} ms`);
      await group.waitFor("the other takes over", () => group.leaders().length === 1, 3 * TTL);
      const next = group.leaders()[0];
      assert.notEqual(next, holder);
      assert.equal(next.keeper.epoch, epoch + 1);
      assert.ok(next.acquired.at(-1)!.atMs >= deadline + MARGIN, "after deadline and margin");
      holder.store.cut = false; // healed: the old holder must not come back at its epoch
      const healedAt = performance.now();
      await group.waitFor(
        "3 x TTL after healing",
        () => performance.now() - healedAt > 3 * TTL,
        4 * TTL,
      );
      assert.deepEqual(group.leaders(), [next]);
      assert.equal(holder.keeper.isLeader(), false);
      group.checkEpochs();
    },
  },
  {
    name: "a store outage of 2 x TTL: the holder steps down by its deadline, a leader after",
    async run(url, store) {
      await using group = new Group(url, "outage");
      for (const id of [1, 2]) await group.add(id);
      await group.waitFor("a leader", () => group.leaders().length === 1, 3 * TTL);
      const holder = group.leaders()[0];
      const epoch = holder.keeper.epoch!;
      let deadline = holder.keeper.holding()!.deadlineMonotonicMs;
      let leaderPastDeadline = false;
      let back = false;
      const downAt = performance.now();
      // Settled either way, so a store that fails to come back fails this step (with its
      // message) instead of surfacing as an uncaught error of the whole file.
      const outage = store.outage(2 * TTL).then(
        () => ({ ok: true as const }),
        (error: unknown) => ({ ok: false as const, error }),
      ).finally(() => back = true);
      let ended: Awaited<typeof outage> | undefined;
      try {
        await group.waitFor("the outage ends", () => {
          deadline = holder.keeper.holding()?.deadlineMonotonicMs ?? deadline;
          if (holder.keeper.isLeader() && performance.now() >= deadline) leaderPastDeadline = true;
          return back;
        }, 20 * TTL);
      } finally {
        ended = await outage;
      }
      if (!ended.ok) throw ended.error;
      assert.equal(leaderPastDeadline, false);
      assert.ok(deadline - downAt <= TTL, `${deadline - downAt} ms`);
      const tookMs = await group.waitFor(
        "a leader after the outage",
        () => group.leaders().length === 1,
        10 * TTL,
      );
      console.log(`leader again ${tookMs.toFixed(0)} ms after the store returned`);
      const leader = group.leaders()[0];
      // The old holder may take its own record back at its epoch; anyone else takes epoch + 1.
      assert.equal(leader.keeper.epoch, leader === holder ? epoch : epoch + 1);
      group.checkEpochs();
    },
  },
];

for (const backend of BACKENDS) {
  if (backend.skip) console.log(`lease rules on ${backend.name}: skipped: ${backend.skip}`);
  Deno.test({
    name: `Lease rules on ${backend.name}`,
    ignore: backend.skip !== undefined,
    async fn(t) {
      const store = await backend.start();
      try {
        for (const rule of RULES) await t.step(rule.name, () => rule.run(store.url, store));
      } finally {
        await store.stop();
      }
    },
  });
}
