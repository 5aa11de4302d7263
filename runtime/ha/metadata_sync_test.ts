import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MetadataStore } from "../../storage/metadata/metadata_store.ts";
import { ConsumerOffsetStore } from "../../storage/metadata/offset_store.ts";
import { type MetadataDb } from "../../storage/metadata/schema.ts";
import { type MetadataDbHandle, openMetadataDb } from "../../storage/metadata/sqlite.ts";
import { openNodeSqlite } from "../../storage/metadata/node_sqlite.ts";
import { CronService } from "../cron_service.ts";
import type { Logger, LogLevel } from "../log.ts";
import type { StoredSubscription } from "../webhook/delivery_service.ts";
import { SubscriptionRepo } from "../webhook/subscriptions.ts";
import {
  decodeSnapshot,
  encodeSnapshot,
  exportMetadata,
  importMetadata,
  MetadataFollower,
  type MetadataSnapshot,
  MetadataSyncError,
  type MetadataSyncErrorCode,
} from "./metadata_sync.ts";

/** A manual wall clock: each read returns the current value; tests move it. */
class ManualClock {
  constructor(public ms: number) {}
  readonly nowMs = () => this.ms;
}

/** Runs `body` with two open metadata files in a fresh temp dir, the master's and the
 * replica's, then closes them and removes the dir. */
async function withTwoDbs(
  body: (master: MetadataDbHandle, replica: MetadataDbHandle) => Promise<void>,
): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "metadata-sync-test-"));
  try {
    using master = await openMetadataDb(join(dir, "master.sqlite"), openNodeSqlite);
    using replica = await openMetadataDb(join(dir, "replica.sqlite"), openNodeSqlite);
    await body(master, replica);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function subscription(group: string, topic: string, nowMs: number): StoredSubscription {
  return {
    group,
    topic,
    tags: "TagA || TagB",
    url: "https://hooks.example.com/orders",
    secrets: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
    headers: { "x-team": "orders" },
    timeoutMs: 5_000,
    maxConcurrency: 4,
    ratePerSec: 0,
    ordered: true,
    failureCallbackUrl: null,
    status: "paused",
    statusReason: "paused by operator",
    createdAt: nowMs,
    updatedAt: nowMs,
  };
}

function cronService(db: MetadataDb, nowMs: () => number, log: Logger = () => {}): CronService {
  return new CronService({
    db,
    produce: () => Promise.reject(new Error("a paused schedule never publishes")),
    nowMs,
    log,
    schedulesMax: 10,
    newId: () => "schedule-1",
  });
}

/** Everything the broker reads back from a metadata file, through its own APIs. */
async function readThroughApis(db: MetadataDb, clock: ManualClock) {
  const store = new MetadataStore(db, { nowMs: clock.nowMs });
  const offsets = await ConsumerOffsetStore.open(db, { nowMs: clock.nowMs });
  const cron = cronService(db, clock.nowMs);
  await cron.start();
  try {
    return {
      topics: await store.listTopics(),
      groups: await store.listConsumerGroups(),
      offsetsA: offsets.queryAll("GroupA", "TopicA"),
      offsetsB: offsets.queryAll("GroupA", "TopicB"),
      subscriptions: await new SubscriptionRepo(db).load(),
      schedules: cron.list(),
    };
  } finally {
    await cron.stop();
  }
}

/** export → encode → decode → import: one replication round. */
async function replicate(
  master: MetadataDb,
  replica: MetadataDb,
  options: { offsets?: ConsumerOffsetStore; nowMs: () => number },
): Promise<{ snapshot: MetadataSnapshot; rows: number }> {
  const snapshot = await exportMetadata(master, options);
  const { rows } = await importMetadata(replica, decodeSnapshot(encodeSnapshot(snapshot)));
  return { snapshot, rows };
}

async function rejectsWith(
  promise: Promise<unknown>,
  code: MetadataSyncErrorCode,
): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof MetadataSyncError, `expected MetadataSyncError, got ${error}`);
    assert.equal(error.code, code, error.message);
    return true;
  });
}

Deno.test("importMetadata() mirrors the master's tables, deletions included", async () => {
  await withTwoDbs(async (master, replica) => {
    const clock = new ManualClock(1_700_000_000_000);
    const store = new MetadataStore(master.db, { nowMs: clock.nowMs });
    await store.upsertTopic({ topicName: "TopicA", readQueueNums: 4, writeQueueNums: 4 });
    await store.upsertTopic({
      topicName: "TopicB",
      perm: 4,
      order: true,
      attributes: { "+message.type": "FIFO" },
    });
    await store.upsertConsumerGroup({
      groupName: "GroupA",
      consumeFromWhere: "TIMESTAMP",
      consumeTimestampMs: 1_600_000_000_000,
      orderly: true,
      retryBackoffMs: [1_000, 30_000],
    });
    const offsets = await ConsumerOffsetStore.open(master.db, { nowMs: clock.nowMs });
    offsets.commit("GroupA", "TopicA", 0, 10);
    offsets.commit("GroupA", "TopicB", 1, 5);
    await offsets.persist();
    // Committed in memory only: the snapshot must still carry them.
    offsets.commit("GroupA", "TopicA", 0, 42);
    offsets.commit("GroupA", "TopicA", 3, 7);
    await new SubscriptionRepo(master.db).save(subscription("GroupA", "TopicA", clock.ms));
    const cron = cronService(master.db, clock.nowMs);
    await cron.create({
      topic: "TopicA",
      cron: "0 * * * *",
      timeZone: "Europe/Berlin",
      message: { body: new Uint8Array([1, 2, 3]), tag: "TagA" },
      missedTicks: "fire_once",
      paused: true,
    });
    await cron.stop();

    // The replica holds rows the master never had; a mirror drops them.
    const stale = new MetadataStore(replica.db, { nowMs: clock.nowMs });
    await stale.upsertTopic({ topicName: "Stale" });
    await new SubscriptionRepo(replica.db).save(subscription("StaleGroup", "Stale", 1));

    clock.ms += 1_000;
    const first = await replicate(master.db, replica.db, { offsets, nowMs: clock.nowMs });
    assert.equal(first.snapshot.takenAtMs, clock.ms);
    assert.deepEqual(Object.keys(first.snapshot.tables), [
      "topic_config",
      "consumer_group",
      "consumer_offset",
      "cron_schedule",
      "webhook_subscription",
      "qstash_state",
    ]);
    assert.equal(first.rows, 2 + 1 + 3 + 1 + 1);

    const expected = await readThroughApis(master.db, clock);
    const mirrored = await readThroughApis(replica.db, clock);
    assert.deepEqual(mirrored, expected);
    assert.deepEqual(mirrored.topics.map((t) => t.topicName), ["TopicA", "TopicB"]);
    assert.deepEqual(mirrored.offsetsA, new Map([[0, 42], [3, 7]]));
    assert.deepEqual(mirrored.offsetsB, new Map([[1, 5]]));
    assert.deepEqual(mirrored.subscriptions.map((s) => s.group), ["GroupA"]);
    assert.deepEqual(mirrored.schedules.map((s) => [s.id, s.timeZone, s.missedTicks]), [
      ["schedule-1", "Europe/Berlin", "fire_once"],
    ]);
    assert.equal(mirrored.groups[0].orderly, true);
    assert.deepEqual(mirrored.groups[0].retryBackoffMs, [1_000, 30_000]);

    // A topic deleted on the master, with its offsets, goes on the next round.
    await store.deleteTopic("TopicB");
    offsets.removeTopic("TopicB");
    clock.ms += 1_000;
    const second = await replicate(master.db, replica.db, { offsets, nowMs: clock.nowMs });
    assert.equal(second.rows, 1 + 1 + 2 + 1 + 1);
    const after = await readThroughApis(replica.db, clock);
    assert.deepEqual(after.topics.map((t) => t.topicName), ["TopicA"]);
    assert.deepEqual(after.offsetsB, new Map());
    assert.deepEqual(after, await readThroughApis(master.db, clock));

    // The replica's own export is the master's, row for row.
    const replicaSnapshot = await exportMetadata(replica.db, { nowMs: clock.nowMs });
    assert.deepEqual(replicaSnapshot.tables, second.snapshot.tables);
    await offsets.stop();
  });
});

Deno.test("importMetadata() refuses a malformed snapshot and changes nothing", async (t) => {
  await withTwoDbs(async (master, replica) => {
    const clock = new ManualClock(5_000);
    const store = new MetadataStore(master.db, { nowMs: clock.nowMs });
    await store.upsertTopic({ topicName: "TopicA" });
    await store.upsertConsumerGroup({ groupName: "GroupA" });
    const offsets = await ConsumerOffsetStore.open(master.db, { nowMs: clock.nowMs });
    offsets.commit("GroupA", "TopicA", 0, 9);
    await new SubscriptionRepo(master.db).save(subscription("GroupA", "TopicA", clock.ms));
    const good = await exportMetadata(master.db, { offsets, nowMs: clock.nowMs });

    // The replica's state before: a different topic, which every refusal must leave.
    await new MetadataStore(replica.db, { nowMs: clock.nowMs }).upsertTopic({
      topicName: "ReplicaOnly",
    });
    const before = await exportMetadata(replica.db, { nowMs: clock.nowMs });
    const unchanged = async () => {
      const now = await exportMetadata(replica.db, { nowMs: clock.nowMs });
      assert.deepEqual(now.tables, before.tables);
    };

    // deno-lint-ignore no-explicit-any
    type Loose = Record<string, any>;
    type Edit = (s: Loose) => void;
    const cases: [string, Edit, MetadataSyncErrorCode][] = [
      ["version 2", (s) => s.version = 2, "SNAPSHOT_VERSION_UNSUPPORTED"],
      ["an unknown top-level key", (s) => s.dataVersion = 1, "SNAPSHOT_ILLEGAL"],
      ["takenAtMs -1", (s) => s.takenAtMs = -1, "SNAPSHOT_ILLEGAL"],
      ["tables as a list", (s) => s.tables = [], "SNAPSHOT_ILLEGAL"],
      ["a table missing", (s) => delete s.tables.cron_schedule, "SNAPSHOT_ILLEGAL"],
      ["the local schema_version table", (s) => s.tables.schema_version = [], "SNAPSHOT_ILLEGAL"],
      ["rows not a list", (s) => s.tables.topic_config = {}, "SNAPSHOT_ILLEGAL"],
      ["a row as a list", (s) => s.tables.topic_config[0] = ["TopicA"], "SNAPSHOT_ILLEGAL"],
      ["a column missing", (s) => delete s.tables.topic_config[0].perm, "SNAPSHOT_ILLEGAL"],
      ["a column unknown", (s) => s.tables.topic_config[0].topicName = "x", "SNAPSHOT_ILLEGAL"],
      ["perm as a string", (s) => s.tables.topic_config[0].perm = "6", "SNAPSHOT_ILLEGAL"],
      [
        "an offset of 1.5",
        (s) => s.tables.consumer_offset[0].queue_offset = 1.5,
        "SNAPSHOT_ILLEGAL",
      ],
      ["a boolean of 2", (s) => s.tables.consumer_group[0].is_orderly = 2, "SNAPSHOT_ILLEGAL"],
      [
        "an unknown enum",
        (s) => s.tables.webhook_subscription[0].status = "gone",
        "SNAPSHOT_ILLEGAL",
      ],
      [
        "null in NOT NULL",
        (s) => s.tables.topic_config[0].created_at_ms = null,
        "SNAPSHOT_ILLEGAL",
      ],
    ];
    for (const [name, edit, code] of cases) {
      await t.step(`importMetadata() refuses ${name}`, async () => {
        const bad: Loose = structuredClone(good);
        edit(bad);
        await rejectsWith(importMetadata(replica.db, bad as MetadataSnapshot), code);
        const bytes = new TextEncoder().encode(JSON.stringify(bad));
        assert.throws(() => decodeSnapshot(bytes), (e: MetadataSyncError) => e.code === code);
        await unchanged();
      });
    }

    // Shape-valid snapshots the database refuses part way: every table is already emptied
    // in the transaction, and the ones before the refused row refilled; all must come back.
    await t.step("a row failing a CHECK rolls back the whole import", async () => {
      const bad = structuredClone(good);
      bad.tables.topic_config[0].perm = 8;
      await assert.rejects(importMetadata(replica.db, bad), (error: Error) => {
        assert.match(`${error} ${error.cause}`, /CHECK constraint failed/);
        return true;
      });
      await unchanged();
    });

    await t.step("a duplicate key in the last table rolls back the whole import", async () => {
      const bad = structuredClone(good);
      bad.tables.webhook_subscription.push({ ...bad.tables.webhook_subscription[0] });
      await assert.rejects(importMetadata(replica.db, bad), (error: Error) => {
        assert.match(`${error} ${error.cause}`, /UNIQUE constraint failed/);
        return true;
      });
      await unchanged();
    });

    await t.step("decodeSnapshot() refuses bytes that are not UTF-8 JSON", async () => {
      for (const bytes of [new TextEncoder().encode("{not json"), new Uint8Array([0x7b, 0xff])]) {
        assert.throws(
          () => decodeSnapshot(bytes),
          (e: MetadataSyncError) => e.code === "SNAPSHOT_MALFORMED",
        );
      }
      await unchanged();
    });

    await t.step("encodeSnapshot() and decodeSnapshot() refuse more than bytesMax", () => {
      const bytes = encodeSnapshot(good);
      const tooLarge = (e: MetadataSyncError) => e.code === "SNAPSHOT_TOO_LARGE";
      assert.throws(() => encodeSnapshot(good, { bytesMax: bytes.byteLength - 1 }), tooLarge);
      assert.throws(() => decodeSnapshot(bytes, { bytesMax: bytes.byteLength - 1 }), tooLarge);
      assert.deepEqual(decodeSnapshot(bytes, { bytesMax: bytes.byteLength }), good);
    });

    await t.step("the unedited snapshot imports", async () => {
      assert.deepEqual(await importMetadata(replica.db, good), { rows: 4 });
      const now = await exportMetadata(replica.db, { nowMs: clock.nowMs });
      assert.deepEqual(now.tables, good.tables);
    });
    await offsets.stop();
  });
});

interface LogEntry {
  level: LogLevel;
  msg: string;
  fields?: Record<string, unknown>;
}

/** Settles when `resolve` is called; a test's hand on an async step. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => resolve = r);
  return { promise, resolve };
}

/** Polls `condition` until it holds: waits for a state, not for an amount of time. */
async function waitFor(what: string, condition: () => boolean): Promise<void> {
  const deadline = performance.now() + 5000;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`Timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function snapshotBytes(takenAtMs: number): Uint8Array {
  const tables = {
    topic_config: [],
    consumer_group: [],
    consumer_offset: [],
    cron_schedule: [],
    webhook_subscription: [],
    qstash_state: [],
  };
  return encodeSnapshot({ version: 1, takenAtMs, tables });
}

Deno.test("MetadataFollower retries a failed round at the next interval; stop() ends it", async () => {
  const clock = new ManualClock(100);
  const logs: LogEntry[] = [];
  const errors: unknown[] = [];
  const applied: number[] = [];
  let fetches = 0;
  const hanging = deferred<AbortSignal>();
  const follower = new MetadataFollower({
    fetchSnapshot: (signal) => {
      fetches += 1;
      if (fetches === 1) return Promise.reject(new Error("master unreachable"));
      if (fetches === 2) return Promise.resolve(new TextEncoder().encode("{torn"));
      if (fetches === 3) return Promise.resolve(snapshotBytes(3));
      // The fourth round hangs until stop() aborts it.
      hanging.resolve(signal);
      return new Promise((_, reject) =>
        signal.addEventListener("abort", () => reject(signal.reason))
      );
    },
    apply: (snapshot) => {
      applied.push(snapshot.takenAtMs);
      return Promise.resolve();
    },
    intervalMs: 10,
    log: (level, msg, fields) => logs.push({ level, msg, fields }),
    nowMs: clock.nowMs,
    onError: (error) => errors.push(error),
  });
  assert.equal(follower.lastSyncedAtMs, undefined);
  follower.start();
  await waitFor("a snapshot is applied", () => applied.length > 0);
  assert.deepEqual(applied, [3]);
  assert.equal(errors.length, 2);
  assert.match(String(errors[0]), /master unreachable/);
  assert.ok(errors[1] instanceof MetadataSyncError && errors[1].code === "SNAPSHOT_MALFORMED");
  assert.deepEqual(logs.filter((e) => e.level === "warn").map((e) => e.msg), [
    "metadata sync failed; retrying at the next interval",
    "metadata sync failed; retrying at the next interval",
  ]);
  assert.equal(follower.lastError, undefined);
  assert.equal(follower.lastSyncedAtMs, 100);

  // The follower's timer is unref'd, so wait by polling, which keeps the test alive.
  await waitFor("the fourth fetch is in flight", () => fetches === 4);
  const signal = await hanging.promise;
  await follower.stop();
  assert.equal(signal.aborted, true);
  assert.equal(fetches, 4);
  assert.equal(errors.length, 2, "an abort by stop() is no failure");
  assert.equal(follower.lastError, undefined);
  await rejectsWith(follower.syncNow(), "FOLLOWER_STOPPED");
  await follower.stop(); // idempotent
  // deno test's op sanitizer fails this test if stop() left a timer behind.
});

Deno.test("MetadataFollower.stop() waits for the apply in flight, and syncNow() reports", async () => {
  const clock = new ManualClock(7);
  const applying = deferred();
  const release = deferred();
  let finished = false;
  let fail = true;
  const follower = new MetadataFollower({
    fetchSnapshot: () =>
      fail ? Promise.reject(new Error("master unreachable")) : Promise.resolve(snapshotBytes(1)),
    apply: async () => {
      applying.resolve();
      await release.promise;
      finished = true;
    },
    intervalMs: 60_000,
    log: () => {},
    nowMs: clock.nowMs,
  });
  await assert.rejects(follower.syncNow(), /master unreachable/);
  assert.match(String(follower.lastError), /master unreachable/);
  fail = false;
  const round = follower.syncNow();
  await applying.promise;
  let stopped = false;
  const stopping = follower.stop().then(() => stopped = true);
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(stopped, false, "stop() waits for the apply in flight");
  release.resolve();
  await stopping;
  await round;
  assert.equal(finished, true);
  assert.equal(follower.lastSyncedAtMs, 7);
  assert.equal(follower.lastError, undefined);
});

Deno.test("MetadataFollower.stop() between rounds clears the interval's timer", async () => {
  let fetches = 0;
  const follower = new MetadataFollower({
    fetchSnapshot: () => {
      fetches += 1;
      return Promise.resolve(snapshotBytes(fetches));
    },
    apply: () => Promise.resolve(),
    intervalMs: 60_000,
    log: () => {},
    nowMs: () => 1,
  });
  follower.start();
  await waitFor("the first round has ended", () => follower.lastSyncedAtMs !== undefined);
  await follower.stop();
  assert.equal(fetches, 1);
  // deno test's op sanitizer fails this test if the 60 s timer is still pending.
});
