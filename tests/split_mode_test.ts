// Split mode: a KV Connect host, a broker registering its route there, and the functions
// as a separate process finding the broker through the route table. Then the broker is
// SIGKILLed and restarted on another port: the functions follow the route, no restart.
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { RUNTIMES, startChild } from "./harness/process.ts";
import { startBroker, startFunctions, tempDir } from "./harness/broker.ts";

const TOKEN = "kv-test-token-0123456789";

for (const runtime of RUNTIMES) {
  Deno.test(`split mode on ${runtime}: functions process -> KV route table -> broker, and a broker restart`, async () => {
    await using kvHost = startChild("deno", "tools/kv_host/main.ts", [
      "--port",
      "0",
      "--token",
      TOKEN,
    ]);
    const { url: kvUrl } = await kvHost.waitForJson<{ url: string }>(
      "KV host url",
      (v) => typeof v.url === "string",
    );
    const env = {
      MQ_KV: kvUrl,
      DENO_KV_ACCESS_TOKEN: TOKEN,
      MQ_ROUTE_HEARTBEAT_MS: "500",
      MQ_FLUSH_DISK_TYPE: "SYNC_FLUSH",
    };
    const dataDir = tempDir(`split-${runtime}`);
    try {
      // Disposed (SIGKILL, a no-op once killed below) even when a step before the kill fails.
      await using first = await startBroker(runtime, { dataDir, env });
      await using functions = await startFunctions(runtime, { kvUrl, kvToken: TOKEN });
      const mq = functions.client;
      await mq.upsertTopic("Split", { readQueueNums: 1, writeQueueNums: 1 });
      const r = await mq.produce("Split", { body: "through the functions", tag: "t" });
      assert.equal(r.durability, "FLUSHED");
      const got = await mq.pull("Split", 0, { offset: 0 });
      assert.deepEqual(got.messages.map((m) => m.body), ["through the functions"]);

      await first.kill();
      const second = await startBroker(runtime, { dataDir, env });
      try {
        assert.notEqual(second.url, first.url);
        // The cached route points at the dead broker: the first call fails and drops it,
        // a later one reads the new route.
        let after;
        for (let attempt = 0; attempt < 20 && !after; attempt++) {
          after = await mq.pull("Split", 0, { offset: 0 }).catch((err) => {
            assert.equal(err.code, "BROKER_UNAVAILABLE");
            return undefined;
          });
        }
        assert.ok(after, "the functions never found the restarted broker");
        assert.deepEqual(after.messages.map((m) => m.body), ["through the functions"]);
        await mq.produce("Split", { body: "after restart" });
        assert.equal((await mq.pull("Split", 0, { offset: 1 })).messages[0].body, "after restart");
      } finally {
        await second.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
}
