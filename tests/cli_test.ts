// The edgemq CLI as a user runs it: a real process (Deno and Bun) against a real broker
// with an API key, human tables and --json, lag per queue, offsets reset by time, lookups,
// tail -f, refusals with exit codes; and `edgemq dev` started and stopped with Ctrl-C.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { type RuntimeName, RUNTIMES, startChild } from "./harness/process.ts";
import { startBroker } from "./harness/broker.ts";

const TOKEN = "cli-test-admin-key-0123456789";
const KEYS = JSON.stringify([{ key: TOKEN, name: "admin", admin: true }]);

async function cli(runtime: RuntimeName, url: string, ...args: string[]) {
  await using child = startChild(runtime, "cli/main.ts", args, {
    EDGEMQ_URL: url,
    EDGEMQ_TOKEN: TOKEN,
  });
  const { code } = await child.exited;
  return { code, out: child.lines.join("\n"), err: child.stderr.join("") };
}

async function ok(runtime: RuntimeName, url: string, ...args: string[]): Promise<string> {
  const r = await cli(runtime, url, ...args);
  assert.equal(r.code, 0, `edgemq ${args.join(" ")} failed: ${r.err}`);
  return r.out;
}

for (const runtime of RUNTIMES) {
  Deno.test(`edgemq CLI on ${runtime}: tables, --json, lag per queue, lookups, tail -f`, async () => {
    await using broker = await startBroker(runtime, { env: { MQ_API_KEYS: KEYS }, token: TOKEN });
    const url = broker.url;
    assert.match(
      await ok(runtime, url, "topics", "create", "Orders", "--queues", "2"),
      /created Orders: 2\/2/,
    );
    assert.match(
      await ok(runtime, url, "topics", "route", "Orders"),
      /topic Orders: 2 queues over 1 groups\n {2}broker-a {2}slot 0 {2}active {2}epoch 0 {2}queues 0-1/,
    );
    const refused = await cli(runtime, url, "topics", "add-group", "Orders", "broker-b");
    assert.notEqual(refused.code, 0);
    assert.match(refused.err, /cluster router/);
    const sent = [];
    for (let i = 0; i < 3; i++) {
      sent.push(
        JSON.parse(
          await ok(
            runtime,
            url,
            "messages",
            "send",
            "Orders",
            `order ${i}`,
            "--key",
            `k${i}`,
            "--json",
          ),
        ),
      );
    }
    await ok(runtime, url, "groups", "create", "billing");
    await ok(
      runtime,
      url,
      "groups",
      "reset-offsets",
      "billing",
      "--topic",
      "Orders",
      "--time",
      "-1h",
    );

    const table = await ok(runtime, url, "topics", "list");
    assert.match(table.split("\n")[0], /^TOPIC\s+QUEUES\s+PERM\s+ORDER\s+MESSAGES/);
    assert.match(table, /Orders\s+2\/2\s+rw\s+no\s+3\s+3/);
    const listed = JSON.parse(await ok(runtime, url, "topics", "list", "--json"));
    assert.equal(listed.find((t: { name: string }) => t.name === "Orders").stats.messages, 3);

    // Lag per queue, as mqadmin consumerProgress shows it.
    const progress = JSON.parse(await ok(runtime, url, "groups", "describe", "billing", "--json"));
    assert.equal(progress.totalLag, 3);
    assert.deepEqual(
      progress.topics[0].queues.map((q: { lag: number }) => q.lag).reduce((a: number, b: number) =>
        a + b
      ),
      3,
    );
    const described = await ok(runtime, url, "groups", "describe", "billing");
    assert.match(described, /total lag 3/);
    assert.match(described, /TOPIC\s+QUEUE\s+MIN\s+MAX\s+CONSUMER OFFSET\s+LAG/);
    assert.match(
      await ok(runtime, url, "groups", "list"),
      /billing\s+CLUSTERING\s+no\s+Orders\s+3\s+0/,
    );

    // Reset to now: nothing left to consume.
    await ok(
      runtime,
      url,
      "groups",
      "reset-offsets",
      "billing",
      "--topic",
      "Orders",
      "--time",
      String(Date.now() + 1000),
    );
    assert.equal(
      JSON.parse(await ok(runtime, url, "groups", "describe", "billing", "--json")).totalLag,
      0,
    );

    assert.match(await ok(runtime, url, "messages", "get", sent[1].messageId), /order 1/);
    const byKey = JSON.parse(
      await ok(runtime, url, "messages", "find", "Orders", "--key", "k2", "--json"),
    );
    assert.deepEqual(byKey.map((m: { body: string }) => m.body), ["order 2"]);
    const tailed = await ok(runtime, url, "messages", "tail", "Orders");
    assert.equal(tailed.split("\n").filter((l) => l.includes("order ")).length, 3);
    const cluster = JSON.parse(await ok(runtime, url, "cluster", "--json"));
    assert.equal(cluster.nodes[0].role, "master");

    // Refusals: a clear line and a failing exit code.
    const missing = await cli(runtime, url, "topics", "get", "NoSuchTopic");
    assert.equal(missing.code, 1);
    assert.match(missing.err, /TOPIC_NOT_FOUND/);
    const noYes = await cli(runtime, url, "dlq", "purge", "billing");
    assert.equal(noYes.code, 2);
    const badKey = await cli(runtime, url, "topics", "list", "--token", "wrong-key-0123456789");
    assert.equal(badKey.code, 1);
    assert.match(badKey.err, /UNAUTHORIZED/);

    // tail -f prints what arrives after it started, and stops on SIGINT.
    await using follow = startChild(runtime, "cli/main.ts", [
      "messages",
      "tail",
      "Orders",
      "-f",
      "-n",
      "0",
    ], {
      EDGEMQ_URL: url,
      EDGEMQ_TOKEN: TOKEN,
    });
    // It starts at each queue's end once it has loaded and asked (a second or more on a
    // busy machine): a message sent before that is old to it. So send until one shows.
    for (const deadline = performance.now() + 30_000;;) {
      assert.ok(performance.now() < deadline, "tail -f printed no new message in 30 s");
      await broker.client.produce("Orders", { body: "late order" });
      const seen = await follow.waitFor(
        "the new message",
        () => follow.lines.some((l) => l.includes("late order")),
        500,
      ).then(() => true, (err: Error) => {
        if (!err.message.includes("timed out")) throw err; // it exited
        return false;
      });
      if (seen) break;
    }
    follow.kill("SIGINT");
    await follow.exited;
    assert.ok(!follow.lines.some((l) => l.includes("order 0")), "tail -n 0 printed old messages");
  });
}

Deno.test("edgemq dev: a throwaway broker, its token works, Ctrl-C deletes the data", async () => {
  await using dev = startChild("deno", "cli/main.ts", ["dev", "--port", "0"]);
  const ready = await dev.waitForJson<{ url: string; token: string; dataDir: string }>(
    "dev-ready",
    (v) => v.event === "dev-ready",
    60_000,
  );
  assert.ok(dev.lines.some((l) => l.includes("curl -X POST")), "no curl example printed");
  assert.ok(existsSync(ready.dataDir));
  const refused = await fetch(`${ready.url}/v1/topics`);
  await refused.body?.cancel();
  assert.equal(refused.status, 401);
  const produced = await fetch(`${ready.url}/v1/topics/demo/messages`, {
    method: "POST",
    headers: { authorization: `Bearer ${ready.token}` },
    body: "hello",
  });
  assert.equal(produced.status, 201, await produced.text());
  dev.kill("SIGINT");
  await dev.exited;
  await dev.waitFor(
    "stopped line",
    () => dev.stderr.join("").includes("data deleted") || undefined,
  );
  assert.ok(!existsSync(ready.dataDir), "the temp data folder is left behind");
});
