import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { getTableConfig, type SQLiteTable } from "drizzle-orm/sqlite-core";
import {
  type ConsumerGroupConfigInput,
  MetadataError,
  type MetadataErrorCode,
  MetadataStore,
  QUEUE_NUMS_MAX,
  type TopicConfigInput,
} from "./metadata_store.ts";
import { SCHEMA_VERSION_LATEST } from "./migrations.ts";
import { ConsumerOffsetStore } from "./offset_store.ts";
import {
  consumerGroup,
  consumerOffset,
  cronSchedule,
  qstashState,
  schemaVersion,
  topicConfig,
  webhookSubscription,
} from "./schema.ts";
import { type MetadataDbHandle, openMetadataDb } from "./sqlite.ts";
import { openNodeSqlite } from "./node_sqlite.ts";

/** A manual wall clock: each read returns the current value; tests move it. */
class ManualClock {
  constructor(public ms: number) {}
  readonly nowMs = () => this.ms;
}

/** Runs `body` with a fresh temp dir holding `metadata.db`, then removes the dir. */
async function withDbPath(body: (path: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "metadata-test-"));
  try {
    await body(join(dir, "metadata.db"));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Opens `path`, runs `body`, and closes the handle whatever happens. */
async function withDb<T>(path: string, body: (handle: MetadataDbHandle) => Promise<T>): Promise<T> {
  const handle = await openMetadataDb(path, openNodeSqlite);
  try {
    return await body(handle);
  } finally {
    handle.close();
  }
}

async function rejectsWith(promise: Promise<unknown>, code: MetadataErrorCode): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof MetadataError, `expected MetadataError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    return true;
  });
}

function throwsWith(work: () => unknown, code: MetadataErrorCode): void {
  assert.throws(work, (error: unknown) => {
    assert.ok(error instanceof MetadataError, `expected MetadataError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    return true;
  });
}

/** Polls `condition` until it holds: waits for a state, not for an amount of time. */
async function waitFor(what: string, condition: () => Promise<boolean>): Promise<void> {
  const deadline = performance.now() + 5000;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`Timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function storedOffsets(handle: MetadataDbHandle): Promise<string[]> {
  const rows = await handle.db.select().from(consumerOffset);
  return rows.map((r) => `${r.groupName}/${r.topicName}/${r.queueId}=${r.offset}`).sort();
}

// SQLite's PRAGMA table_info shows a default as SQL text.
function sqlDefault(value: unknown): string | null {
  if (value === undefined) return null;
  if (typeof value === "boolean") return value ? "1" : "0";
  if (typeof value === "string") return `'${value}'`;
  return String(value);
}

Deno.test("openMetadataDb() creates the tables of schema.ts, once", async (t) => {
  await withDbPath(async (path) => {
    await t.step(
      "every schema.ts column exists with its type, nullability, default and key",
      async () => {
        await withDb(path, async (handle) => {
          assert.equal(handle.schemaVersion, SCHEMA_VERSION_LATEST);
          assert.equal(handle.driver, "node:sqlite");
          const tables: SQLiteTable[] = [
            topicConfig,
            consumerGroup,
            consumerOffset,
            cronSchedule,
            webhookSubscription,
            qstashState,
            schemaVersion,
          ];
          for (const table of tables) {
            const config = getTableConfig(table);
            const keyColumns = config.primaryKeys[0]?.columns.map((c) => c.name) ??
              config.columns.filter((c) => c.primary).map((c) => c.name);
            const expected = config.columns.map((column) => ({
              name: column.name,
              type: column.getSQLType().toUpperCase(),
              notnull: column.notNull ? 1 : 0,
              dflt_value: sqlDefault(column.default),
              pk: keyColumns.indexOf(column.name) + 1,
            }));
            // Raw queries through sqlite-proxy answer rows as arrays.
            const rows = await handle.db.all<[string, string, number, string | null, number]>(
              sql`SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(${config.name})`,
            );
            const actual = rows.map(([name, type, notnull, dflt_value, pk]) => ({
              name,
              type,
              notnull,
              dflt_value,
              pk,
            }));
            assert.equal(actual.length, expected.length, config.name);
            assert.deepEqual(
              actual.sort((a, b) => a.name.localeCompare(b.name)),
              expected.sort((a, b) => a.name.localeCompare(b.name)),
              config.name,
            );
          }
        });
      },
    );

    await t.step("reopening applies no migration twice", async () => {
      await withDb(path, async (handle) => {
        assert.equal(handle.schemaVersion, SCHEMA_VERSION_LATEST);
        const versions = await handle.db.select().from(schemaVersion);
        assert.deepEqual(versions, [{ version: 1 }, { version: 2 }, { version: 3 }, {
          version: 4,
        }]);
      });
    });

    await t.step("a file from a newer build is refused and closed", async () => {
      await withDb(path, (handle) => handle.db.insert(schemaVersion).values({ version: 99 }));
      assert.equal(existsSync(`${path}-wal`), false);
      await rejectsWith(openMetadataDb(path, openNodeSqlite), "SCHEMA_VERSION_UNSUPPORTED");
      // Deno's resource sanitizer does not see node:sqlite handles. The last connection to
      // close removes the WAL file, so its absence shows the refused open closed its own.
      assert.equal(existsSync(`${path}-wal`), false);
    });
  });
});

Deno.test("MetadataStore topics round-trip with RocketMQ defaults", async (t) => {
  await withDbPath((path) =>
    withDb(path, async ({ db }) => {
      const clock = new ManualClock(1_000);
      const store = new MetadataStore(db, { nowMs: clock.nowMs });

      await t.step("upsertTopic() with only a name stores 16/16 queues, perm 6", async () => {
        const stored = await store.upsertTopic({ topicName: "TopicA" });
        const expected = {
          topicName: "TopicA",
          readQueueNums: 16,
          writeQueueNums: 16,
          perm: 6,
          order: false,
          attributes: {},
          createdAtMs: 1_000,
          updatedAtMs: 1_000,
        };
        assert.deepEqual(stored, expected);
        assert.deepEqual(await store.getTopic("TopicA"), expected);
      });

      await t.step("upsertTopic() replaces every setting and keeps createdAtMs", async () => {
        clock.ms = 2_000;
        const full = {
          topicName: "TopicA",
          readQueueNums: 8,
          writeQueueNums: 4,
          perm: 4,
          order: true,
          attributes: { "+message.type": "FIFO", "queue.type": "" },
        };
        const expected = { ...full, createdAtMs: 1_000, updatedAtMs: 2_000 };
        assert.deepEqual(await store.upsertTopic(full), expected);
        assert.deepEqual(await store.getTopic("TopicA"), expected);

        clock.ms = 3_000;
        const reset = await store.upsertTopic({ topicName: "TopicA", readQueueNums: undefined });
        assert.equal(reset.readQueueNums, 16);
        assert.equal(reset.perm, 6);
        assert.equal(reset.order, false);
        assert.deepEqual(reset.attributes, {});
        assert.equal(reset.createdAtMs, 1_000);
        assert.equal(reset.updatedAtMs, 3_000);
      });

      await t.step("listTopics() returns every topic by name", async () => {
        await store.upsertTopic({ topicName: "TopicC", perm: 7 });
        await store.upsertTopic({ topicName: "TopicB", perm: 0 });
        const topics = await store.listTopics();
        assert.deepEqual(topics.map((topic) => [topic.topicName, topic.perm]), [
          ["TopicA", 6],
          ["TopicB", 0],
          ["TopicC", 7],
        ]);
      });

      await t.step("deleteTopic() says whether the topic existed", async () => {
        assert.equal(await store.deleteTopic("TopicB"), true);
        assert.equal(await store.deleteTopic("TopicB"), false);
        assert.equal(await store.getTopic("TopicB"), undefined);
        assert.deepEqual((await store.listTopics()).map((topic) => topic.topicName), [
          "TopicA",
          "TopicC",
        ]);
      });
    })
  );
});

Deno.test("MetadataStore.upsertTopic() refuses bad settings with a MetadataError", async (t) => {
  await withDbPath((path) =>
    withDb(path, async ({ db }) => {
      const store = new MetadataStore(db, { nowMs: () => 1 });
      const bad: [
        string,
        Partial<TopicConfigInput> | Record<string, unknown>,
        MetadataErrorCode,
      ][] = [
        ["readQueueNums 0", { readQueueNums: 0 }, "QUEUE_NUMS_ILLEGAL"],
        ["writeQueueNums 1025", { writeQueueNums: QUEUE_NUMS_MAX + 1 }, "QUEUE_NUMS_ILLEGAL"],
        ["readQueueNums 1.5", { readQueueNums: 1.5 }, "QUEUE_NUMS_ILLEGAL"],
        ["readQueueNums as a string", { readQueueNums: "8" }, "QUEUE_NUMS_ILLEGAL"],
        ["perm -1", { perm: -1 }, "PERM_ILLEGAL"],
        ["perm 8", { perm: 8 }, "PERM_ILLEGAL"],
        ["order 1", { order: 1 }, "FLAG_ILLEGAL"],
        ["attributes array", { attributes: ["a"] }, "ATTRIBUTES_ILLEGAL"],
        ["attributes number value", { attributes: { a: 1 } }, "ATTRIBUTES_ILLEGAL"],
        ["attributes 4 KiB", { attributes: { a: "x".repeat(4096) } }, "ATTRIBUTES_ILLEGAL"],
      ];
      for (const [name, settings, code] of bad) {
        await t.step(name, async () => {
          const input = { topicName: "Bad", ...settings } as TopicConfigInput;
          await rejectsWith(store.upsertTopic(input), code);
          assert.equal(await store.getTopic("Bad"), undefined);
        });
      }

      await t.step("the bounds themselves are accepted", async () => {
        const low = await store.upsertTopic({
          topicName: "Low",
          readQueueNums: 1,
          writeQueueNums: 1,
          perm: 0,
        });
        assert.deepEqual([low.readQueueNums, low.writeQueueNums, low.perm], [1, 1, 0]);
        const high = await store.upsertTopic({
          topicName: "High",
          readQueueNums: QUEUE_NUMS_MAX,
          writeQueueNums: QUEUE_NUMS_MAX,
          perm: 7,
        });
        assert.deepEqual([high.readQueueNums, high.writeQueueNums, high.perm], [1024, 1024, 7]);
      });

      await t.step("the table itself refuses perm 8 written around the store", async () => {
        await assert.rejects(
          db.insert(topicConfig).values({
            topicName: "Raw",
            perm: 8,
            createdAtMs: 1,
            updatedAtMs: 1,
          }),
          // drizzle wraps the driver's error and keeps it as the cause.
          (error: Error) => {
            assert.match(String(error.cause), /CHECK constraint failed/);
            return true;
          },
        );
      });
    })
  );
});

Deno.test("MetadataStore consumer groups round-trip with RocketMQ defaults", async (t) => {
  await withDbPath((path) =>
    withDb(path, async ({ db }) => {
      const clock = new ManualClock(5_000);
      const store = new MetadataStore(db, { nowMs: clock.nowMs });

      await t.step("upsertConsumerGroup() with only a name stores retryMaxTimes 16", async () => {
        const expected = {
          groupName: "GroupA",
          consumeEnable: true,
          messageModel: "CLUSTERING",
          consumeFromWhere: "LAST_OFFSET",
          consumeTimestampMs: null,
          retryMaxTimes: 16,
          retryQueueNums: 1,
          orderly: false,
          retryBackoffMs: null,
          createdAtMs: 5_000,
          updatedAtMs: 5_000,
        };
        assert.deepEqual(await store.upsertConsumerGroup({ groupName: "GroupA" }), expected);
        assert.deepEqual(await store.getConsumerGroup("GroupA"), expected);
      });

      await t.step(
        "upsertConsumerGroup() replaces every setting and keeps createdAtMs",
        async () => {
          clock.ms = 6_000;
          const full = {
            groupName: "GroupA",
            consumeEnable: false,
            messageModel: "BROADCASTING",
            consumeFromWhere: "TIMESTAMP",
            consumeTimestampMs: 1_700_000_000_000,
            retryMaxTimes: 3,
            retryQueueNums: 0,
            orderly: true,
            retryBackoffMs: [1_000, 5_000, 259_200_000],
          } as const;
          const expected = { ...full, createdAtMs: 5_000, updatedAtMs: 6_000 };
          assert.deepEqual(await store.upsertConsumerGroup(full), expected);
          assert.deepEqual(await store.getConsumerGroup("GroupA"), expected);
        },
      );

      await t.step("listConsumerGroups() and deleteConsumerGroup()", async () => {
        await store.upsertConsumerGroup({ groupName: "GroupC" });
        await store.upsertConsumerGroup({ groupName: "GroupB" });
        const names = async () => (await store.listConsumerGroups()).map((g) => g.groupName);
        assert.deepEqual(await names(), ["GroupA", "GroupB", "GroupC"]);
        assert.equal(await store.deleteConsumerGroup("GroupA"), true);
        assert.equal(await store.deleteConsumerGroup("GroupA"), false);
        assert.equal(await store.getConsumerGroup("GroupA"), undefined);
        assert.deepEqual(await names(), ["GroupB", "GroupC"]);
      });

      const bad: [string, Record<string, unknown>, MetadataErrorCode][] = [
        ["messageModel lower case", { messageModel: "clustering" }, "MESSAGE_MODEL_ILLEGAL"],
        [
          "consumeFromWhere unknown",
          { consumeFromWhere: "MAX_OFFSET" },
          "CONSUME_FROM_WHERE_ILLEGAL",
        ],
        [
          "TIMESTAMP without a time",
          { consumeFromWhere: "TIMESTAMP" },
          "CONSUME_TIMESTAMP_ILLEGAL",
        ],
        [
          "TIMESTAMP negative",
          { consumeFromWhere: "TIMESTAMP", consumeTimestampMs: -1 },
          "CONSUME_TIMESTAMP_ILLEGAL",
        ],
        ["a time without TIMESTAMP", { consumeTimestampMs: 5 }, "CONSUME_TIMESTAMP_ILLEGAL"],
        ["retryMaxTimes -1", { retryMaxTimes: -1 }, "RETRY_MAX_TIMES_ILLEGAL"],
        ["retryQueueNums 1025", { retryQueueNums: 1025 }, "QUEUE_NUMS_ILLEGAL"],
        ["consumeEnable as a string", { consumeEnable: "true" }, "FLAG_ILLEGAL"],
        ["orderly null", { orderly: null }, "FLAG_ILLEGAL"],
        ["empty backoff", { retryBackoffMs: [] }, "RETRY_BACKOFF_ILLEGAL"],
        ["65 backoff steps", { retryBackoffMs: Array(65).fill(1_000) }, "RETRY_BACKOFF_ILLEGAL"],
        ["zero backoff step", { retryBackoffMs: [1_000, 0] }, "RETRY_BACKOFF_ILLEGAL"],
        ["backoff over 3 days", { retryBackoffMs: [259_200_001] }, "RETRY_BACKOFF_ILLEGAL"],
      ];
      for (const [name, settings, code] of bad) {
        await t.step(`upsertConsumerGroup() refuses ${name}`, async () => {
          const input = { groupName: "Bad", ...settings } as ConsumerGroupConfigInput;
          await rejectsWith(store.upsertConsumerGroup(input), code);
          assert.equal(await store.getConsumerGroup("Bad"), undefined);
        });
      }
    })
  );
});

Deno.test("ConsumerOffsetStore keeps offsets in memory until persist()", async (t) => {
  await withDbPath(async (path) => {
    const clock = new ManualClock(10_000);
    const nowMs = clock.nowMs;

    await t.step(
      "commit() and query() work in memory; closing without persist() loses them",
      async () => {
        await withDb(path, async ({ db }) => {
          const offsets = await ConsumerOffsetStore.open(db, { nowMs });
          assert.equal(offsets.query("G1", "T1", 0), undefined);
          offsets.commit("G1", "T1", 0, 5);
          offsets.commit("G1", "T1", 0, 7);
          offsets.commit("G1", "T1", 3, 0);
          assert.equal(offsets.query("G1", "T1", 0), 7);
          assert.equal(offsets.query("G1", "T1", 3), 0);
          assert.equal(offsets.query("G1", "T2", 0), undefined);
          assert.deepEqual(offsets.queryAll("G1", "T1"), new Map([[0, 7], [3, 0]]));
          assert.deepEqual(offsets.queryAll("G2", "T1"), new Map());
        });
        await withDb(path, async ({ db }) => {
          const offsets = await ConsumerOffsetStore.open(db, { nowMs });
          assert.equal(offsets.query("G1", "T1", 0), undefined);
        });
      },
    );

    await t.step("persist() writes the commits; a reopen loads them", async () => {
      await withDb(path, async (handle) => {
        const offsets = await ConsumerOffsetStore.open(handle.db, { nowMs });
        offsets.commit("G1", "T1", 0, 7);
        offsets.commit("G1", "T1", 3, 9);
        offsets.commit("G2", "T1", 0, 100);
        assert.deepEqual(await storedOffsets(handle), []);
        await offsets.persist();
        clock.ms = 11_000;
        offsets.commit("G1", "T1", 3, 2); // backwards: a reset
        await offsets.persist();
        await offsets.persist(); // nothing pending: a no-op
        const rows = await handle.db.select().from(consumerOffset);
        const g1q3 = rows.find((r) => r.groupName === "G1" && r.queueId === 3);
        assert.deepEqual(g1q3, {
          groupName: "G1",
          topicName: "T1",
          queueId: 3,
          offset: 2,
          updatedAtMs: 11_000,
        });
      });
      await withDb(path, async ({ db }) => {
        const offsets = await ConsumerOffsetStore.open(db, { nowMs });
        assert.deepEqual(offsets.queryAll("G1", "T1"), new Map([[0, 7], [3, 2]]));
        assert.equal(offsets.query("G2", "T1", 0), 100);
      });
    });

    await t.step("commit() refuses a bad queueId or offset", async () => {
      await withDb(path, async ({ db }) => {
        const offsets = await ConsumerOffsetStore.open(db, { nowMs });
        throwsWith(() => offsets.commit("G1", "T1", -1, 0), "QUEUE_ID_ILLEGAL");
        throwsWith(() => offsets.commit("G1", "T1", QUEUE_NUMS_MAX, 0), "QUEUE_ID_ILLEGAL");
        throwsWith(() => offsets.commit("G1", "T1", 0, -1), "OFFSET_ILLEGAL");
        throwsWith(() => offsets.commit("G1", "T1", 0, 1.5), "OFFSET_ILLEGAL");
        throwsWith(() => offsets.commit("G1", "T1", 0, 2 ** 53), "OFFSET_ILLEGAL");
        throwsWith(() => offsets.commit("G1", "T1", 0, NaN), "OFFSET_ILLEGAL");
        assert.equal(offsets.query("G1", "T1", 0), 7);
        offsets.commit("G1", "T1", QUEUE_NUMS_MAX - 1, Number.MAX_SAFE_INTEGER);
        assert.equal(offsets.query("G1", "T1", QUEUE_NUMS_MAX - 1), Number.MAX_SAFE_INTEGER);
        await offsets.stop();
      });
      await withDb(path, async ({ db }) => {
        const offsets = await ConsumerOffsetStore.open(db, { nowMs });
        assert.equal(offsets.query("G1", "T1", QUEUE_NUMS_MAX - 1), Number.MAX_SAFE_INTEGER);
      });
    });
  });
});

Deno.test("ConsumerOffsetStore.removeGroup() and removeTopic() delete rows at the next persist", async () => {
  await withDbPath((path) =>
    withDb(path, async (handle) => {
      const offsets = await ConsumerOffsetStore.open(handle.db, { nowMs: () => 1 });
      offsets.commit("G1", "T1", 0, 1);
      offsets.commit("G1", "T2", 0, 2);
      offsets.commit("G2", "T1", 0, 3);
      offsets.commit("G2", "T2", 1, 4);
      await offsets.persist();

      offsets.removeGroup("G1");
      offsets.commit("G1", "T2", 5, 50); // after the removal: must survive the delete
      offsets.removeTopic("T1");
      assert.equal(offsets.query("G1", "T1", 0), undefined);
      assert.equal(offsets.query("G2", "T1", 0), undefined);
      assert.deepEqual(offsets.queryAll("G1", "T2"), new Map([[5, 50]]));
      assert.deepEqual(await storedOffsets(handle), [
        "G1/T1/0=1",
        "G1/T2/0=2",
        "G2/T1/0=3",
        "G2/T2/1=4",
      ]);

      await offsets.persist();
      assert.deepEqual(await storedOffsets(handle), ["G1/T2/5=50", "G2/T2/1=4"]);
    })
  );
});

Deno.test("ConsumerOffsetStore.persist() is atomic and retries what failed", async () => {
  await withDbPath((path) =>
    withDb(path, async (handle) => {
      const offsets = await ConsumerOffsetStore.open(handle.db, { nowMs: () => 1 });
      offsets.commit("G1", "T1", 0, 1);
      offsets.commit("G2", "T1", 0, 2);
      await offsets.persist();

      // A failing write inside the transaction, as a full disk would give.
      await handle.db.run(
        sql.raw(`CREATE TEMP TRIGGER refuse_offsets BEFORE INSERT ON consumer_offset
        BEGIN SELECT RAISE(ABORT, 'offsets refused'); END`),
      );
      offsets.removeGroup("G1");
      offsets.commit("G2", "T1", 0, 20);
      await assert.rejects(offsets.persist(), /offsets refused/);
      assert.deepEqual(await storedOffsets(handle), ["G1/T1/0=1", "G2/T1/0=2"]); // delete undone

      await handle.db.run(sql.raw("DROP TRIGGER refuse_offsets"));
      await offsets.persist();
      assert.deepEqual(await storedOffsets(handle), ["G2/T1/0=20"]);
    })
  );
});

Deno.test("ConsumerOffsetStore.start() persists on its interval; stop() persists a last time", async (t) => {
  await withDbPath(async (path) => {
    await t.step("the timer writes commits, and keeps writing later ones", async () => {
      await withDb(path, async (handle) => {
        const offsets = await ConsumerOffsetStore.open(handle.db, { nowMs: () => 1 });
        offsets.start({ intervalMs: 10 });
        try {
          offsets.commit("G", "T", 0, 1);
          assert.deepEqual(await storedOffsets(handle), []);
          await waitFor(
            "the first commit is persisted",
            async () => (await storedOffsets(handle)).includes("G/T/0=1"),
          );
          offsets.commit("G", "T", 0, 2);
          await waitFor(
            "the second commit is persisted",
            async () => (await storedOffsets(handle)).includes("G/T/0=2"),
          );
        } finally {
          await offsets.stop();
        }
      });
    });

    await t.step("stop() persists what the timer has not", async () => {
      await withDb(path, async (handle) => {
        const offsets = await ConsumerOffsetStore.open(handle.db, { nowMs: () => 1 });
        offsets.start(); // 5 s: will not fire during this step
        offsets.commit("G", "T", 1, 30);
        await offsets.stop();
        assert.deepEqual(await storedOffsets(handle), ["G/T/0=2", "G/T/1=30"]);
      });
    });

    await t.step("a failed background persist goes to onPersistError and is retried", async () => {
      await withDb(path, async (handle) => {
        const offsets = await ConsumerOffsetStore.open(handle.db, { nowMs: () => 1 });
        await handle.db.run(
          sql.raw(`CREATE TEMP TRIGGER refuse_offsets BEFORE UPDATE ON consumer_offset
          BEGIN SELECT RAISE(ABORT, 'offsets refused'); END`),
        );
        const errors: unknown[] = [];
        offsets.start({ intervalMs: 10, onPersistError: (error) => errors.push(error) });
        try {
          offsets.commit("G", "T", 0, 3);
          await waitFor("a persist has failed", () => Promise.resolve(errors.length > 0));
          assert.match(String(errors[0]), /offsets refused/);
          await handle.db.run(sql.raw("DROP TRIGGER refuse_offsets"));
          await waitFor(
            "the retry is persisted",
            async () => (await storedOffsets(handle)).includes("G/T/0=3"),
          );
        } finally {
          await offsets.stop();
        }
      });
    });
  });
});
