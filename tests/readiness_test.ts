// Readiness during recovery: a store of a few hundred MiB with no checkpoint (so the whole
// log is scanned) is opened by a real broker process. While it recovers, its port answers:
// /readyz 503 with bytes scanned, an upper bound and an ETA, the API 503
// /problems/recovering; progress is logged at the configured interval; then /readyz 200.
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { MessageStore } from "../storage/message_store.ts";
import { NodeFilePort } from "../storage/node_fs_port.ts";
import { defaultStoreConfig } from "../storage/config.ts";
import { testMessage } from "../storage/testing.ts";
import { startChild } from "./harness/process.ts";
import { tempDir } from "./harness/broker.ts";

const SEGMENT_BYTES = 64 * 1024 * 1024;
const LOG_BYTES = 256 * 1024 * 1024;
const BODY_BYTES = 1024;

async function fillStore(dir: string): Promise<void> {
  const store = new MessageStore({
    files: new NodeFilePort(),
    config: { ...defaultStoreConfig(`${dir}/store`), mappedFileSizeCommitLog: SEGMENT_BYTES },
    nowMs: Date.now,
  });
  await store.open();
  const body = new Uint8Array(BODY_BYTES).fill(7);
  while (store.maxPhysicalOffset < LOG_BYTES) {
    const batch = [];
    for (let i = 0; i < 2048; i++) batch.push(store.putMessage(testMessage("Big", i % 4, body)));
    await Promise.all(batch);
  }
  await store.close();
  // No checkpoint: the next open scans the whole CommitLog.
  rmSync(`${dir}/store/checkpoint`);
}

Deno.test("a recovering broker answers /readyz 503 with progress, the API 503 recovering, then ready", async () => {
  const dir = tempDir("readiness");
  try {
    await fillStore(dir);
    await using child = startChild("deno", "runtime/main.ts", [], {
      PORT: "0",
      DATA_DIR: dir,
      MQ_LOG_LEVEL: "info",
      MQ_SEGMENT_BYTES: String(SEGMENT_BYTES),
      MQ_RECOVERY_PROGRESS_INTERVAL_MS: "200",
    });
    const { url } = await child.waitForJson<{ url: string }>(
      "recovering line",
      (v) => v.event === "recovering",
      60_000,
    );
    const seen: Array<{ ready: boolean; recovery?: { scannedBytes: number; totalBytes: number } }> =
      [];
    let apiRefusal: { status: number; type?: string } | undefined;
    for (;;) {
      const res = await fetch(`${url}/readyz`);
      const body = await res.json();
      assert.equal(res.status, body.ready ? 200 : 503);
      seen.push(body);
      if (body.ready) break;
      if (!apiRefusal && body.recovery?.scannedBytes > 0) {
        const api = await fetch(`${url}/v1/topics`);
        apiRefusal = { status: api.status, type: (await api.json()).type };
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    const during = seen.filter((s) => !s.ready && (s.recovery?.scannedBytes ?? 0) > 0);
    assert.ok(during.length >= 1, `never saw progress: ${JSON.stringify(seen.slice(0, 5))}`);
    const last = during.at(-1)!.recovery!;
    assert.ok(last.totalBytes >= LOG_BYTES, "total is an upper bound of the log");
    assert.ok(last.scannedBytes <= last.totalBytes);
    assert.deepEqual(apiRefusal, { status: 503, type: "/problems/recovering" });
    await child.waitForJson("listening line", (v) => v.event === "listening", 60_000);
    const progressLogs = child.stderr.join("").split("\n").filter((l) =>
      l.includes('"recovery progress"')
    );
    assert.ok(progressLogs.length >= 1, "no progress logged");
    assert.match(progressLogs[0], /"etaSeconds":\d+/);
    const ready = await fetch(`${url}/readyz`);
    assert.equal(ready.status, 200);
    await ready.body?.cancel();
    const stats = await fetch(`${url}/healthz`);
    assert.equal(stats.status, 200);
    await stats.body?.cancel();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
