// A full disk heals (issue #19, points 1-3), against real broker processes on both runtimes:
// the data folder on a small tmpfs beside a filler file; produce until 503
// /problems/store-not-writable (ENOSPC), delete the filler, produce succeeds again within a
// bounded time, SIGKILL and restart, and every acknowledged message is there, nothing else.
// The stop and the resume are each logged once and counted. Needs root (mount): skipped,
// with the reason printed, otherwise.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import process from "node:process";
import { BrokerError, messageBody, type MqClient } from "../client/mod.ts";
import { RUNTIMES } from "./harness/process.ts";
import { type BrokerProcess, startBroker } from "./harness/broker.ts";

const TMPFS_BYTES = 12 * 1024 * 1024;
const FILLER_BYTES = 4 * 1024 * 1024;
const BODY_BYTES = 16 * 1024;
const RESUME_WITHIN_MS = 10_000;
const dec = new TextDecoder();

function mountTmpfs(): { dir: string; unmount: () => void } | string {
  if (process.getuid?.() !== 0) return "not root: cannot mount a tmpfs";
  const dir = mkdtempSync(`${tmpdir()}/mq-diskfull-`);
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${TMPFS_BYTES}`, "tmpfs", dir]);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    return `mount -t tmpfs failed: ${err}`;
  }
  return {
    dir,
    unmount: () => {
      execFileSync("umount", [dir]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const body = (i: number) => `m${i}:`.padEnd(BODY_BYTES, "x");

/** Produces message `i` to queue 0; its queue offset, or the error code it was refused with. */
async function produce(client: MqClient, i: number): Promise<number | string> {
  try {
    return (await client.produce("full", { body: body(i), queueId: 0 })).queueOffset;
  } catch (err) {
    if (err instanceof BrokerError) return err.code;
    throw err;
  }
}

async function readAll(client: MqClient): Promise<string[]> {
  const out: string[] = [];
  for (let offset = 0;;) {
    const got = await client.pull("full", 0, { offset, max: 32 });
    if (got.messages.length === 0) return out;
    for (const m of got.messages) {
      assert.equal(m.queueOffset, out.length, "queue 0 is dense and in order");
      out.push(dec.decode(messageBody(m)));
    }
    offset = got.nextOffset;
  }
}

/** Produces until refused; returns the count acknowledged (queue offsets 0, 1, ...). */
async function fill(client: MqClient): Promise<number> {
  for (let i = 0;; i++) {
    assert.ok(i < 2000, "the disk never filled");
    const got = await produce(client, i);
    if (typeof got !== "number") {
      assert.equal(got, "STORE_NOT_WRITABLE");
      return i;
    }
    assert.equal(got, i);
  }
}

const logLines = (broker: BrokerProcess, msg: string) =>
  broker.child.stderr.join("").split("\n").filter((l) => l.includes(`"msg":"${msg}"`));

for (const runtime of RUNTIMES) {
  for (const flushDiskType of ["ASYNC_FLUSH", "SYNC_FLUSH"]) {
    Deno.test(`${runtime} broker (${flushDiskType}) refuses on a full disk, resumes once space is freed, loses no ack`, async () => {
      const mounted = mountTmpfs();
      if (typeof mounted === "string") {
        console.log(`skipped: ${mounted}`);
        return;
      }
      const dataDir = `${mounted.dir}/data`;
      const filler = `${mounted.dir}/filler`;
      mkdirSync(dataDir);
      writeFileSync(filler, new Uint8Array(FILLER_BYTES).fill(1));
      const env = {
        MQ_FLUSH_DISK_TYPE: flushDiskType,
        MQ_SEGMENT_BYTES: String(1024 * 1024),
        MQ_MAX_MESSAGE_SIZE: String(64 * 1024),
        MQ_INDEX_HASH_SLOTS: "1000",
        MQ_INDEX_ENTRIES: "4000",
        MQ_CQ_FILE_UNITS: "10000",
        MQ_NO_SPACE_RETRY_MS: "100",
        MQ_NO_SPACE_RESUME_BYTES: String(256 * 1024),
        // Retention's own disk-use refusal stays out of the way: this is about ENOSPC.
        MQ_RETENTION_CHECK_MS: "3600000",
        MQ_LOG_LEVEL: "info",
      };
      let broker: BrokerProcess | undefined;
      try {
        broker = await startBroker(runtime, { dataDir, env });
        const acked: string[] = [];
        let refusedWith: number | string = 0;
        for (let i = 0; typeof refusedWith === "number"; i++) {
          assert.ok(i < 2000, "the disk never filled");
          refusedWith = await produce(broker.client, i);
          if (typeof refusedWith === "number") {
            assert.equal(refusedWith, acked.length);
            acked.push(body(i));
          }
        }
        assert.equal(refusedWith, "STORE_NOT_WRITABLE");
        assert.ok(acked.length > 50, `only ${acked.length} produced before the disk was full`);
        assert.equal(await produce(broker.client, 5000), "STORE_NOT_WRITABLE");
        assert.equal((await broker.client.health()).writable, false);

        rmSync(filler);
        const freedAt = Date.now();
        let resumed: number | string = "STORE_NOT_WRITABLE";
        for (let i = 6000; typeof resumed !== "number"; i++) {
          assert.ok(Date.now() - freedAt < RESUME_WITHIN_MS, "writes did not resume");
          await new Promise((r) => setTimeout(r, 50));
          resumed = await produce(broker.client, i);
          if (typeof resumed === "number") acked.push(body(i));
          else assert.equal(resumed, "STORE_NOT_WRITABLE");
        }
        assert.equal(resumed, acked.length - 1, "queue offsets continue without a gap");
        for (let i = 7000; i < 7010; i++) {
          assert.equal(await produce(broker.client, i), acked.length);
          acked.push(body(i));
        }
        // Each change logged once (error, then info) and counted.
        const stopped = logLines(broker, "store stopped accepting writes");
        assert.equal(stopped.length, 1, stopped.join("\n"));
        assert.equal(JSON.parse(stopped[0]).level, "error");
        assert.equal(JSON.parse(stopped[0]).cause, "no-space");
        const again = logLines(broker, "store accepts writes again");
        assert.equal(again.length, 1, again.join("\n"));
        assert.equal(JSON.parse(again[0]).level, "info");
        const metrics = await (await fetch(`${broker.url}/metrics`)).text();
        assert.match(metrics, /^mq_store_writable_changes_total 2$/m);
        assert.match(metrics, /^mq_store_writable 1$/m);

        await broker.kill();
        broker = await startBroker(runtime, { dataDir, env });
        const stored = await readAll(broker.client);
        assert.equal(stored.length, acked.length);
        assert.ok(stored.every((b, i) => b === acked[i]), "every ack stored at its offset");
      } finally {
        await broker?.[Symbol.asyncDispose]();
        mounted.unmount();
      }
    });
  }
}

for (const runtime of RUNTIMES) {
  Deno.test(`${runtime} broker (SYNC_FLUSH) zero-fills the next segment only with room to spare and gives its space to live writes`, async () => {
    const mounted = mountTmpfs();
    if (typeof mounted === "string") {
      console.log(`skipped: ${mounted}`);
      return;
    }
    const dataDir = `${mounted.dir}/data`;
    mkdirSync(dataDir);
    let broker: BrokerProcess | undefined;
    try {
      // Segments half the disk: the next one's zero-fill would leave the live one half the
      // disk, and (before) its live writes failed with half the disk held by zeros.
      broker = await startBroker(runtime, {
        dataDir,
        env: {
          MQ_FLUSH_DISK_TYPE: "SYNC_FLUSH",
          MQ_SEGMENT_ZERO_FILL: "true",
          MQ_SEGMENT_BYTES: String(TMPFS_BYTES / 2),
          MQ_MAX_MESSAGE_SIZE: String(64 * 1024),
          MQ_INDEX_HASH_SLOTS: "1000",
          MQ_INDEX_ENTRIES: "4000",
          MQ_CQ_FILE_UNITS: "10000",
          MQ_NO_SPACE_RESUME_BYTES: String(256 * 1024),
          MQ_RETENTION_CHECK_MS: "3600000",
        },
      });
      const acked = await fill(broker.client);
      const ackedBytes = acked * BODY_BYTES;
      assert.ok(
        ackedBytes > TMPFS_BYTES * 0.8,
        `refused after ${acked} messages (${ackedBytes} bytes) on a ${TMPFS_BYTES}-byte disk`,
      );
    } finally {
      await broker?.[Symbol.asyncDispose]();
      mounted.unmount();
    }
  });
}
