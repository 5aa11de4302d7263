// `npm run cluster` (tools/cluster/main.ts, issue #26): the launcher starts etcd, broker
// groups and a functions process, prints one cluster-ready line whose url serves produce
// and pull, and on SIGTERM stops every process it started and removes its temp folders.
// Started here with deno directly: `npm run` would first run scripts/install.sh.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import process from "node:process";
import { MqClient } from "../client/mod.ts";
import { denokvBinary } from "../tools/cluster/coordination.ts";
import { ETCD_SKIP_REASON } from "./harness/etcd.ts";
import { RUNTIMES, startChild } from "./harness/process.ts";

interface Ready {
  event: string;
  url: string;
  dataDir: string;
  functions: { pid: number }[];
  groups: { name: string; brokers: { pid: number; url: string }[] }[];
  coordination: { kind: string; pid: number };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

if (ETCD_SKIP_REASON) console.log(`cluster launcher: skipped: ${ETCD_SKIP_REASON}`);
for (const runtime of RUNTIMES) {
  Deno.test({
    name:
      `npm run cluster -- --groups 2 --replicas 2 --runtime ${runtime}: ready line, produce and pull through its url, SIGTERM stops all`,
    ignore: ETCD_SKIP_REASON !== undefined,
    async fn() {
      await using launcher = startChild("deno", "tools/cluster/main.ts", [
        "--groups",
        "2",
        "--replicas",
        "2",
        "--runtime",
        runtime,
      ], { MQ_GRPC: "false", MQ_REMOTING: "false" });
      const ready = await launcher.waitForJson<Ready>(
        "cluster-ready",
        (v) => v.event === "cluster-ready",
        90_000,
      );
      const jsonLines = launcher.lines.filter((l) => l.startsWith("{"));
      assert.equal(jsonLines.length, 1, "exactly one JSON line before a stop");
      assert.deepEqual(ready.groups.map((g) => g.name), ["broker-a", "broker-b"]);
      assert.equal(ready.coordination.kind, "etcd");
      const pids = [
        ready.coordination.pid,
        ...ready.functions.map((f) => f.pid),
        ...ready.groups.flatMap((g) => g.brokers.map((b) => b.pid)),
      ];
      try {
        assert.equal(pids.length, 1 + 1 + 4);
        assert.ok(pids.every(alive));
        assert.ok(existsSync(ready.dataDir));

        const mq = new MqClient({ baseUrl: ready.url, retries: 0 });
        await mq.upsertTopic("Launched", { readQueueNums: 2, writeQueueNums: 2 });
        const sent = await mq.produce("Launched", { body: "through the launcher" });
        const got = await mq.pull("Launched", sent.queueId, { offset: sent.queueOffset });
        assert.deepEqual(got.messages.map((m) => m.body), ["through the launcher"]);

        launcher.kill("SIGTERM");
        await launcher.exited;
        assert.ok(
          launcher.lines.some((l) => l.includes('"event":"cluster-stopped"')),
          `no cluster-stopped line; stderr: ${launcher.stderr.join("").slice(-2000)}`,
        );
        assert.deepEqual(pids.filter(alive), [], "every child is gone");
        assert.equal(existsSync(ready.dataDir), false, "its temp folder is removed");
      } finally {
        // The launcher's children run in process groups of their own: a failed step above
        // (after which the launcher is only SIGKILLed) must not leave them running.
        for (const pid of pids.filter(alive)) {
          try {
            process.kill(pid, "SIGKILL");
          } catch { /* gone meanwhile */ }
        }
      }
    },
  });
}

Deno.test({
  name: "npm run cluster -- --coordination denokv without a denokv binary exits 2, saying why",
  ignore: denokvBinary() !== undefined,
  async fn() {
    await using launcher = startChild("deno", "tools/cluster/main.ts", [
      "--coordination",
      "denokv",
    ], { PATH: "/usr/bin:/bin", DENOKV_BIN: "" });
    const { code } = await launcher.exited;
    assert.equal(code, 2);
    assert.match(launcher.stderr.join(""), /denokv is not on PATH/);
  },
});

Deno.test("npm run cluster with a bad argument exits 2, saying which", async () => {
  await using launcher = startChild("deno", "tools/cluster/main.ts", ["--groups", "0"]);
  const { code } = await launcher.exited;
  assert.equal(code, 2);
  assert.match(launcher.stderr.join(""), /--groups must be an integer in 1\.\.26/);
});
