// /metrics on a real broker (Deno and Bun) and on split-mode functions: the exposition is
// parsed strictly (tests/support/prom_parse.ts) and by Prometheus's own `promtool check
// metrics` (tests/support/promtool.ts), every family has HELP and TYPE, and the
// produce/consume counters, lag, POP in flight and HTTP histogram move with traffic.
import assert from "node:assert/strict";
import { RUNTIMES, startChild } from "./harness/process.ts";
import { startBroker, startFunctions } from "./harness/broker.ts";
import { Cluster } from "./harness/cluster.ts";
import { parseExposition, sampleValue } from "./support/prom_parse.ts";
import { promtoolProblems } from "./support/promtool.ts";

async function scrape(url: string) {
  const res = await fetch(`${url}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /text\/plain/);
  const text = await res.text();
  assert.equal(promtoolProblems(text), undefined);
  return parseExposition(text);
}

for (const runtime of RUNTIMES) {
  Deno.test(`metrics on ${runtime}: strict exposition, counters move with traffic`, async () => {
    await using broker = await startBroker(runtime);
    const mq = broker.client;
    await mq.upsertTopic("Metered", { readQueueNums: 1, writeQueueNums: 1 });
    await mq.upsertGroup("meter-group");
    const before = await scrape(broker.url);
    for (const f of before.values()) assert.ok(f.help.length > 0, `${f.name} has no HELP`);
    for (
      const name of [
        "mq_commitlog_max_offset",
        "mq_held_pulls",
        "mq_timer_lateness_seconds",
        "mq_store_bytes",
        "mq_disk_used_ratio",
        "mq_http_request_duration_seconds",
        "process_resident_memory_bytes",
      ]
    ) assert.ok(before.has(name), `missing family ${name}`);

    for (let i = 0; i < 3; i++) await mq.produce("Metered", { body: "12345" });
    const pulled = await mq.pull("Metered", 0, { offset: 0, group: "meter-group" });
    assert.equal(pulled.messages.length, 3);
    await mq.commitOffset("meter-group", "Metered", 0, 1);

    const after = await scrape(broker.url);
    const topic = { topic: "Metered" };
    assert.equal(sampleValue(after, "mq_messages_produced_total", topic), 3);
    assert.equal(sampleValue(after, "mq_bytes_produced_total", topic), 15);
    assert.equal(sampleValue(after, "mq_messages_consumed_total", topic), 3);
    assert.equal(
      sampleValue(after, "mq_consumer_lag_messages", { group: "meter-group", ...topic }),
      2,
    );
    assert.equal(sampleValue(after, "mq_dlq_messages", { group: "meter-group" }), 0);
    const produceCount = (f: typeof after) =>
      sampleValue(f, "mq_http_request_duration_seconds_count", { family: "produce", code: "2xx" });
    assert.equal(produceCount(after), 3);
    // ASYNC_FLUSH syncs every 500 ms: wait for one flush to be counted.
    let flushed = 0;
    for (let i = 0; i < 50 && flushed === 0; i++) {
      flushed = sampleValue(await scrape(broker.url), "mq_flush_duration_seconds_count") ?? 0;
      if (flushed === 0) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(flushed > 0, "no flush counted");
    // POP in flight: one received and not acked, then none.
    const popped = await mq.receive("meter-group", {
      topic: "Metered",
      max: 1,
      invisibleMs: 60_000,
    });
    assert.equal(popped.length, 1);
    const inFlight = async () =>
      sampleValue(await scrape(broker.url), "mq_pop_inflight_messages") ?? -1;
    assert.equal(await inFlight(), 1);
    await mq.ack("meter-group", popped[0].receiptHandle);
    assert.equal(await inFlight(), 0);
    assert.ok(
      sampleValue(after, "mq_commitlog_max_offset")! >
        sampleValue(before, "mq_commitlog_max_offset")!,
    );
  });
}

Deno.test("the strict parser refuses what Prometheus would", () => {
  assert.throws(() => parseExposition("mq_x 1\n"), /outside its declared family/);
  assert.throws(() => parseExposition("# TYPE mq_x gauge\nmq_x 1\n"), /without # HELP/);
  assert.throws(() => parseExposition("# HELP mq_x h\n# TYPE mq_x gauge\nmq_x one\n"), /bad value/);
  assert.throws(
    () => parseExposition('# HELP h h\n# TYPE h histogram\nh_bucket{le="1"} 2\nh_count 2\n'),
    /\+Inf/,
  );
  assert.throws(() => parseExposition('# HELP g g\n# TYPE g gauge\ng{a="1} 1\n'), /label/);
});

Deno.test("split-mode functions serve their own HTTP and process figures, and the operations views", async () => {
  const token = "kv-test-token-0123456789";
  await using kvHost = startChild("deno", "tools/kv_host/main.ts", [
    "--port",
    "0",
    "--token",
    token,
  ]);
  const { url: kvUrl } = await kvHost.waitForJson<{ url: string }>(
    "KV host url",
    (v) => typeof v.url === "string",
  );
  await using broker = await startBroker("deno", {
    env: { MQ_KV: kvUrl, DENO_KV_ACCESS_TOKEN: token, MQ_ROUTE_HEARTBEAT_MS: "500" },
  });
  await using functions = await startFunctions("deno", { kvUrl, kvToken: token });
  await fetch(`${functions.url}/healthz`).then((r) => r.body?.cancel());
  await broker.client.upsertGroup("split-group");
  const groups = await fetch(`${functions.url}/v1/groups`);
  assert.equal(groups.status, 200);
  assert.deepEqual((await groups.json()).groups.map((g: { group: string }) => g.group), [
    "split-group",
  ]);
  const cluster = await fetch(`${functions.url}/v1/cluster`);
  assert.equal((await cluster.json()).nodes[0].role, "master");
  const families = await scrape(functions.url);
  assert.ok(families.has("process_uptime_seconds"));
  assert.ok(
    sampleValue(families, "mq_http_request_duration_seconds_count", { family: "probe" })! >= 1,
  );
});

Deno.test("a replicated group: slaves serve their replication figures, the master its broker's too", async () => {
  await using cluster = new Cluster("deno", 2, {
    MQ_LEASE_TTL_MS: "2000",
    MQ_LEASE_MARGIN_MS: "300",
    MQ_REPLICATION_MODE: "ASYNC",
    MQ_HA_HEARTBEAT_MS: "200",
  });
  await cluster.startKv();
  await Promise.all([0, 1].map((i) => cluster.start(i)));
  const master = await cluster.waitForMaster(1);
  const slave = 1 - master;
  const slaveFamilies = await scrape(cluster.replicas[slave].proc!.url);
  assert.equal(sampleValue(slaveFamilies, "mq_ha_role", { role: "slave" }), 1);
  assert.ok(slaveFamilies.has("mq_ha_replica_lag_bytes"));
  assert.ok(!slaveFamilies.has("mq_messages_produced_total"), "a slave has no broker figures");
  const masterFamilies = await scrape(cluster.replicas[master].proc!.url);
  assert.equal(sampleValue(masterFamilies, "mq_ha_role", { role: "master" }), 1);
  assert.ok(masterFamilies.has("mq_store_bytes"));
  const view = await fetch(`${cluster.replicas[master].proc!.url}/v1/cluster`).then((r) =>
    r.json()
  );
  assert.equal(view.mode, "replicated");
  assert.deepEqual(view.nodes.map((n: { role: string }) => n.role).sort(), ["master", "slave"]);
});
