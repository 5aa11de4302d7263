// Real crashes: a child process (Deno, then Bun) appends with SYNC_FLUSH and prints each
// resolved append; we SIGKILL it at random moments, restart it (it recovers), and at the
// end check that every append it ever reported is stored at its queue offset with the
// same bytes, and that every queue is dense and in order.
import { PROPERTY_KEYS } from "../storage/message/message_const.ts";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { MessageStore } from "../storage/message_store.ts";
import { NodeFilePort } from "../storage/node_fs_port.ts";
import { defaultStoreConfig } from "../storage/config.ts";
import { seededRandom } from "../storage/testing.ts";
import { crashBody } from "./fixtures/crash_body.ts";
import { RUNTIMES, startChild } from "./harness/process.ts";

const CYCLES = 10;
const SEGMENT_BYTES = 256 * 1024;

interface Ack {
  seq: number;
  topic: string;
  queueId: number;
  queueOffset: number;
}

for (const runtime of RUNTIMES) {
  Deno.test(`SYNC_FLUSH appends survive ${CYCLES} SIGKILLs of a ${runtime} process`, async () => {
    const dir = mkdtempSync(`${tmpdir()}/mq-crash-${runtime}-`);
    const random = seededRandom(Date.now() >>> 0);
    const acks: Ack[] = [];
    let nextSeq = 0;
    try {
      for (let cycle = 0; cycle < CYCLES; cycle++) {
        await using child = startChild(runtime, "tests/fixtures/crash_appender.ts", [
          dir,
          String(nextSeq),
          String(SEGMENT_BYTES),
        ]);
        const want = 20 + Math.floor(random() * 400);
        await child.waitFor(
          `${want} acks`,
          () => child.lines.filter((l) => l.startsWith("A ")).length >= want,
          60_000,
        );
        child.kill("SIGKILL");
        const { signal } = await child.exited;
        assert.equal(signal, "SIGKILL");
        for (const line of child.lines) {
          if (!line.startsWith("A ")) continue;
          const [, seq, topic, queueId, queueOffset, , durability] = line.split(" ");
          assert.equal(durability, "FLUSHED");
          acks.push({
            seq: Number(seq),
            topic,
            queueId: Number(queueId),
            queueOffset: Number(queueOffset),
          });
          nextSeq = Math.max(nextSeq, Number(seq) + 1);
        }
        nextSeq += 1000; // sequences of a killed child that never acked are skipped
      }
      await verify(dir, acks);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

async function verify(dir: string, acks: Ack[]) {
  const store = new MessageStore({
    files: new NodeFilePort(),
    config: {
      ...defaultStoreConfig(dir),
      flushDiskType: "SYNC_FLUSH",
      mappedFileSizeCommitLog: SEGMENT_BYTES,
      mappedFileSizeConsumeQueueUnits: 1000,
      maxHashSlotNum: 1000,
      maxIndexNum: 4000,
    },
    nowMs: () => Date.now(),
  });
  const report = await store.open();
  assert.equal(report.abnormal, true, "a SIGKILLed store must be seen as an unclean stop");
  try {
    assert.ok(acks.length >= CYCLES * 20);
    for (const ack of acks) {
      const got = store.getMessage(ack.topic, ack.queueId, ack.queueOffset, {
        maxMsgNums: 1,
        maxBytes: 1 << 20,
      });
      assert.equal(
        got.status,
        "FOUND",
        `acked seq ${ack.seq} at ${ack.topic}:${ack.queueId}@${ack.queueOffset} is missing`,
      );
      const record = got.messages[0].record;
      assert.equal(
        record.properties.get(PROPERTY_KEYS),
        `seq${ack.seq}`,
        `seq ${ack.seq} has another message at its offset`,
      );
      assert.deepEqual(record.body, crashBody(ack.seq));
    }
    // Queues are dense and ordered: sequence numbers rise with queue offsets.
    for (const topic of ["Alpha", "Beta"]) {
      for (const queueId of [0, 1]) {
        let lastSeq = -1;
        const max = store.getMaxOffsetInQueue(topic, queueId);
        for (let offset = 0; offset < max;) {
          const got = store.getMessage(topic, queueId, offset, {
            maxMsgNums: 32,
            maxBytes: 1 << 20,
          });
          assert.equal(got.status, "FOUND");
          for (const m of got.messages) {
            assert.equal(m.queueOffset, offset++);
            const seq = Number(m.record.properties.get(PROPERTY_KEYS)!.slice(3));
            assert.ok(seq > lastSeq, `queue ${topic}:${queueId} out of order at ${m.queueOffset}`);
            assert.deepEqual(m.record.body, crashBody(seq));
            lastSeq = seq;
          }
        }
      }
    }
  } finally {
    await store.close();
  }
}
