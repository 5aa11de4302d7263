// Route registration writes the broker's entry, with its topics and the head of its message
// ids (idPrefix: the cluster router's find-by-id asks that group first), and removes it on
// a graceful stop.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { loadBrokerConfig } from "./config.ts";
import { pickPlatform } from "./platform/pick.ts";
import { decodeRoute, encodeRoute, readRoutes, ROUTES_PREFIX } from "./protocol/routes.ts";
import { registerChecked, startRouteRegistration } from "./route_registry.ts";

Deno.test("startRouteRegistration() registers topics and idPrefix, and removes the entry on stop", async () => {
  const dir = mkdtempSync(`${tmpdir()}/mq-route-reg-`);
  const platform = await pickPlatform();
  const config = loadBrokerConfig({}, {
    DATA_DIR: dir,
    MQ_CLUSTER: "C1",
    MQ_BROKER_NAME: "g-x",
  }, []);
  const registration = await startRouteRegistration({
    config,
    address: "127.0.0.1:9",
    broker: {
      idPrefix: "7F0000010001ABCDEF01",
      topicConfigs:
        () => [{ name: "t", readQueueNums: 2, writeQueueNums: 2, perm: 6, order: false }],
    },
    log: () => {},
    nowMs: () => 5,
    openKv: platform.openKv,
  });
  const kv = await platform.openKv(config.kvPath, {});
  try {
    const entry = decodeRoute((await kv.get([...ROUTES_PREFIX, "C1", "g-x"]))!.value)!;
    assert.equal(entry.idPrefix, "7F0000010001ABCDEF01");
    assert.deepEqual(entry.topics, [{ name: "t", readQueueNums: 2, writeQueueNums: 2, perm: 6 }]);
    await registration.stop();
    assert.equal(await kv.get([...ROUTES_PREFIX, "C1", "g-x"]), null);
  } finally {
    kv.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

Deno.test("registration never overwrites a higher epoch's entry; the expiry sweep leaves a rewritten entry", async () => {
  const dir = mkdtempSync(`${tmpdir()}/mq-route-reg-`);
  const platform = await pickPlatform();
  const config = loadBrokerConfig({}, {
    DATA_DIR: dir,
    MQ_CLUSTER: "C1",
    MQ_BROKER_NAME: "g-x",
  }, []);
  const key = [...ROUTES_PREFIX, "C1", "g-x"];
  const kv = await platform.openKv(config.kvPath, {});
  try {
    const successor = {
      cluster: "C1",
      brokerName: "g-x",
      address: "127.0.0.1:8",
      epoch: 5,
      topics: [],
      updatedAtMs: 1,
    };
    await kv.set(key, encodeRoute(successor));
    const deposed = await startRouteRegistration({
      config,
      address: "127.0.0.1:9",
      broker: { topicConfigs: () => [] },
      log: () => {},
      nowMs: () => 5,
      openKv: platform.openKv,
      epoch: 3,
    });
    await deposed.stop({ remove: false });
    assert.equal(decodeRoute((await kv.get(key))!.value)!.epoch, 5, "the successor's entry stays");
    assert.equal(await registerChecked(kv, key, { ...successor, epoch: 6 }, () => {}), true);
    assert.equal(decodeRoute((await kv.get(key))!.value)!.epoch, 6);

    // Listed expired, written again before the sweep deletes it: it stays.
    const listed = (await kv.list(ROUTES_PREFIX))[0];
    await kv.set(key, encodeRoute({ ...successor, updatedAtMs: 1_000_000 }));
    const stale = { ...kv, list: () => Promise.resolve([listed]), get: kv.get.bind(kv) };
    stale.delete = kv.delete.bind(kv);
    assert.deepEqual(await readRoutes(stale, 500_000, 1000), []);
    assert.ok(await kv.get(key), "the rewritten entry is not deleted");
    assert.deepEqual(await readRoutes(kv, 2_000_000, 1000), []);
    assert.equal(await kv.get(key), null, "an expired entry is swept");
  } finally {
    kv.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
