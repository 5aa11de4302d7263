// TopicRecords.update() over a real KvPort: concurrent writers never lose each other's
// change (compare-and-set, re-read, retry), and a writer that keeps losing gives up with
// TOPIC_ROUTE_CONFLICT.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { pickPlatform } from "../platform/pick.ts";
import { BrokerError } from "../protocol/errors.ts";
import { newRecord, RECORD_CAS_ATTEMPTS, TopicRecords } from "./topic_records.ts";

Deno.test("TopicRecords.update(): concurrent additions all land, each with its own slot", async () => {
  const dir = mkdtempSync(`${tmpdir()}/mq-records-`);
  const kv = await (await pickPlatform()).openKv(`${dir}/kv.sqlite`, {});
  try {
    const writers = Array.from({ length: 4 }, () => new TopicRecords(kv, "C", () => 1));
    await writers[0].update("t", () => newRecord("t", ["g0"], 0));
    await Promise.all(writers.map((w, i) =>
      w.update("t", (r) => ({
        ...r!,
        groups: [...r!.groups, { brokerGroup: `w${i}`, slot: r!.nextSlot, state: "active" }],
        nextSlot: r!.nextSlot + 1,
      }))
    ));
    const record = (await writers[0].get("t"))!;
    assert.deepEqual(record.groups.map((g) => g.brokerGroup).sort(), [
      "g0",
      "w0",
      "w1",
      "w2",
      "w3",
    ]);
    assert.deepEqual(record.groups.map((g) => g.slot).sort(), [0, 1, 2, 3, 4]);
    assert.equal(record.nextSlot, 5);

    // A writer whose every attempt is overtaken gives up, typed.
    let overtakes = 0;
    await assert.rejects(
      writers[0].update("t", (r) => {
        overtakes++;
        void kv.set(["mq", "topic_routes", "C", "t"], new Uint8Array()); // not awaited
        return { ...r!, nextSlot: r!.nextSlot + 1 };
      }),
      (e) =>
        e instanceof BrokerError && (e.code === "TOPIC_ROUTE_CONFLICT" || e.code === "INTERNAL"),
    );
    assert.ok(overtakes >= 1 && overtakes <= RECORD_CAS_ATTEMPTS);
  } finally {
    kv.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
