// Route registration writes the broker's entry, with its topics and the head of its message
// ids (idPrefix: the cluster router's find-by-id asks that group first), and removes it on
// a graceful stop.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { loadBrokerConfig } from "./config.ts";
import { pickPlatform } from "./platform/pick.ts";
import { decodeRoute, ROUTES_PREFIX } from "./protocol/routes.ts";
import { startRouteRegistration } from "./route_registry.ts";

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
