import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openMetadataDb } from "./sqlite.ts";
import { openNodeSqlite } from "./node_sqlite.ts";
import { CronScheduleRepo, type CronScheduleRow } from "./cron_schedule_repo.ts";
import { type SubscriptionRecord, WebhookSubscriptionRepo } from "./webhook_subscription_repo.ts";
import { QstashStateRepo } from "./qstash_state_repo.ts";

/** Runs `body` on a fresh metadata database in a temp dir, then removes the dir. */
/** Rows by schedule id: the table has no order of its own. */
async function sortedRows(repo: CronScheduleRepo): Promise<CronScheduleRow[]> {
  return (await repo.all()).sort((a, b) => a.scheduleId < b.scheduleId ? -1 : 1);
}

async function withDb(
  body: (db: Awaited<ReturnType<typeof openMetadataDb>>["db"]) => Promise<void>,
) {
  const dir = mkdtempSync(join(tmpdir(), "metadata-repos-test-"));
  const handle = await openMetadataDb(join(dir, "metadata.db"), openNodeSqlite);
  try {
    await body(handle.db);
  } finally {
    handle.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

Deno.test("CronScheduleRepo inserts, pauses, records ticks and deletes rows", async () => {
  await withDb(async (db) => {
    const repo = new CronScheduleRepo(db);
    const row: CronScheduleRow = {
      scheduleId: "s1",
      topicName: "T",
      cron: "*/5 * * * *",
      timeZone: "UTC",
      messageJson: '{"body":"aGk="}',
      paused: false,
      missedTicks: "skip",
      lastTickMs: null,
      createdAtMs: 1000,
      updatedAtMs: 1000,
    };
    await repo.insert(row);
    await repo.insert({ ...row, scheduleId: "s2" });
    assert.deepEqual(await sortedRows(repo), [row, { ...row, scheduleId: "s2" }]);
    await repo.setPaused("s1", { paused: true, updatedAtMs: 2000, lastTickMs: 1500 });
    await repo.setLastTick("s2", 3000);
    assert.deepEqual(await sortedRows(repo), [
      { ...row, paused: true, updatedAtMs: 2000, lastTickMs: 1500 },
      { ...row, scheduleId: "s2", lastTickMs: 3000 },
    ]);
    await repo.delete("s1");
    assert.deepEqual((await repo.all()).map((r) => r.scheduleId), ["s2"]);
  });
});

Deno.test("WebhookSubscriptionRepo keeps the settings as JSON, upserts by group, updates status", async () => {
  await withDb(async (db) => {
    const repo = new WebhookSubscriptionRepo(db);
    const sub: SubscriptionRecord = {
      group: "G",
      topic: "T",
      config: { url: "https://example.test/hook", concurrency: 4 },
      status: "active",
      statusReason: null,
      createdAt: 1000,
      updatedAt: 1000,
    };
    await repo.upsert(sub);
    assert.deepEqual(await repo.all(), [sub]);
    const moved = { ...sub, topic: "U", config: { url: "https://example.test/other" } };
    await repo.upsert(moved);
    assert.deepEqual(await repo.all(), [moved]);
    await repo.setStatus("G", "paused", "too many failures", 2000);
    assert.deepEqual(await repo.all(), [
      { ...moved, status: "paused", statusReason: "too many failures", updatedAt: 2000 },
    ]);
    await repo.delete("G");
    assert.deepEqual(await repo.all(), []);
  });
});

Deno.test("QstashStateRepo stores one JSON document per name and replaces it", async () => {
  await withDb(async (db) => {
    let now = 1000;
    const repo = new QstashStateRepo(db, () => now);
    assert.equal(await repo.get("signing_keys"), undefined);
    await repo.put("signing_keys", { current: "sig_a", next: "sig_b" });
    now = 2000;
    await repo.put("signing_keys", { current: "sig_b", next: "sig_c" });
    await repo.put("dlq_tombstones", { g: ["m1"] });
    assert.deepEqual(await repo.get("signing_keys"), { current: "sig_b", next: "sig_c" });
    assert.deepEqual(await repo.get("dlq_tombstones"), { g: ["m1"] });
  });
});
