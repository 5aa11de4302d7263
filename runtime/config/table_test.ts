// The settings table: defaults agree with the store's own, every row accepts its default
// and its own rendering of it, and a bad value names the setting, the value and the range.
import assert from "node:assert/strict";
import { ConfigError } from "../protocol/setting.ts";
import {
  functionsLimits,
  functionsSettingsFromEnv,
  httpConnectionLimits,
  LIMIT_SETTINGS,
} from "../protocol/limits.ts";
import { defaultStoreConfig } from "../../storage/config.ts";
import { defaultBrokerConfig, SETTINGS } from "./table.ts";
import { loadBrokerConfig } from "./load.ts";

function refusal(f: () => unknown): ConfigError {
  try {
    f();
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err;
  }
  throw new Error("expected a ConfigError");
}

Deno.test("defaultBrokerConfig().store is the store's own defaultStoreConfig()", () => {
  assert.deepEqual(defaultBrokerConfig("/d").store, defaultStoreConfig("/d/store"));
});

Deno.test("every setting's default passes its own check, from a flag too", () => {
  for (const row of SETTINGS) {
    // Unset and empty defaults are filled from other settings (segmentZeroFill, kvPath...).
    if (row.default === undefined || row.default === "") continue;
    assert.deepEqual(row.check(row.default), row.default, row.name);
    // Lists are comma-separated in flags; apiKeys is JSON.
    const text = row.name === "apiKeys"
      ? JSON.stringify(row.default)
      : Array.isArray(row.default)
      ? row.default.join(",")
      : String(row.default);
    const config = loadBrokerConfig({}, {}, [`${row.flag}=${text}`]) as unknown as {
      store: Record<string, unknown>;
    } & Record<string, unknown>;
    const got = row.name.startsWith("store.") ? config.store[row.name.slice(6)] : config[row.name];
    assert.deepEqual(got, row.default, row.name);
  }
});

Deno.test("loadBrokerConfig() refusals name the setting, the value and what is allowed", () => {
  const port = refusal(() => loadBrokerConfig({}, { PORT: "70000" }, []));
  assert.equal(port.setting, "port");
  assert.equal(port.value, 70000);
  assert.match(
    port.message,
    /^port must be an integer from 0 to 65535, got 70000 \[PORT, --port\]$/,
  );

  const wait = refusal(() => loadBrokerConfig({}, {}, ["--pull-wait-ms-max", "90000"]));
  assert.match(
    wait.message,
    /pullWaitMsMax must be an integer from 0 to 60000 \(a held pull keeps/,
  );

  const disk = refusal(() => loadBrokerConfig({ store: { diskMaxUsedSpaceRatio: 101 } }, {}, []));
  assert.equal(disk.setting, "store.diskMaxUsedSpaceRatio");

  const flush = refusal(() => loadBrokerConfig({}, { MQ_FLUSH_DISK_TYPE: "SOMETIMES" }, []));
  assert.match(flush.message, /flushDiskType must be SYNC_FLUSH or ASYNC_FLUSH, got "SOMETIMES"/);
});

Deno.test("loadBrokerConfig() checks config-file values as it checks the environment", () => {
  assert.equal(refusal(() => loadBrokerConfig({ port: "80" }, {}, [])).setting, "port");
  assert.equal(refusal(() => loadBrokerConfig({ logLevel: "loud" }, {}, [])).value, "loud");
  assert.match(
    refusal(() => loadBrokerConfig({ portt: 1 }, {}, [])).message,
    /Unknown setting portt/,
  );
  assert.match(refusal(() => loadBrokerConfig({}, {}, ["--portt", "1"])).message, /Unknown flag/);
  assert.match(
    refusal(() => loadBrokerConfig({ apiKeys: [{ key: "short" }] }, {}, [])).message,
    /at least 16 characters/,
  );
  const rolled = refusal(() =>
    loadBrokerConfig({ timerRollWindowMs: 72 * 3_600_000 }, {}, ["--file-reserved-time=72"])
  );
  assert.equal(rolled.setting, "timerRollWindowMs");
});

Deno.test("loadBrokerConfig() fills the settings that follow others", () => {
  const c = loadBrokerConfig({ haHost: "10.0.0.2" }, { DATA_DIR: "/var/mq", PORT: "9000" }, []);
  assert.equal(c.kvPath, "/var/mq/kv.sqlite");
  assert.equal(c.advertisedAddress, "127.0.0.1:9000");
  assert.equal(c.haAdvertisedHost, "10.0.0.2");
  assert.equal(c.store.storePathRootDir, "/var/mq/store");
});

Deno.test("functionsSettingsFromEnv() defaults to the broker's limits and reads the same variables", () => {
  assert.deepEqual(functionsSettingsFromEnv({}).limits, functionsLimits(defaultBrokerConfig()));
  const env = { MQ_MAX_MESSAGE_SIZE: "4096", MQ_BATCH_ITEMS_MAX: "10", MQ_ROUTE_CACHE_MS: "" };
  const got = functionsSettingsFromEnv(env);
  assert.deepEqual(got.limits, functionsLimits(loadBrokerConfig({}, env, [])));
  assert.equal(got.limits.maxMessageSize, 4096);
  assert.equal(got.routeCacheMs, 5000, "an empty variable is unset");
  const bad = refusal(() => functionsSettingsFromEnv({ MQ_PULL_MAX: "-1" }));
  assert.equal(bad.setting, LIMIT_SETTINGS.pullMsgNumsMax.name);
});

Deno.test("httpConnectionLimits(): the broker and the functions read the same rows; the switch turns the guard off", () => {
  const env = { MQ_HTTP_HEADER_TIMEOUT_MS: "2500", MQ_HTTP_CONNECTIONS_MAX: "7" };
  const broker = httpConnectionLimits(loadBrokerConfig({}, env, []), "0.0.0.0");
  assert.deepEqual(broker, { headerTimeoutMs: 2500, idleTimeoutMs: 30_000, connectionsMax: 7 });
  assert.deepEqual(functionsSettingsFromEnv({ ...env, HOST: "0.0.0.0" }).connections, broker);
  const off = { ...env, MQ_HTTP_CONNECTION_GUARD: "off" };
  assert.equal(httpConnectionLimits(loadBrokerConfig({}, off, []), "0.0.0.0"), undefined);
  assert.equal(functionsSettingsFromEnv({ ...off, HOST: "0.0.0.0" }).connections, undefined);
});

Deno.test("httpConnectionLimits(): auto guards a server others can reach, not one on loopback only", () => {
  const config = loadBrokerConfig({}, {}, []);
  assert.equal(config.httpConnectionGuard, "auto");
  for (const host of ["127.0.0.1", "127.1.2.3", "localhost", "::1"]) {
    assert.equal(httpConnectionLimits(config, host), undefined, host);
  }
  for (const host of ["0.0.0.0", "10.0.0.5", "::", "broker.internal"]) {
    assert.ok(httpConnectionLimits(config, host), host);
  }
  const on = loadBrokerConfig({}, { MQ_HTTP_CONNECTION_GUARD: "on" }, []);
  assert.ok(httpConnectionLimits(on, "127.0.0.1"));
  assert.equal(functionsSettingsFromEnv({}).connections, undefined);
  assert.ok(functionsSettingsFromEnv({ MQ_HTTP_CONNECTION_GUARD: "on" }).connections);
});

Deno.test("haMode cluster takes a KV Connect URL or etcd:// endpoints, never a local KV file", () => {
  const env = (kv: string) => ({ MQ_HA_MODE: "cluster", MQ_KV: kv });
  for (const kv of ["https://kv.example/db", "etcd://10.0.0.1:2379,10.0.0.2:2379"]) {
    assert.equal(loadBrokerConfig({}, env(kv), []).kvPath, kv);
  }
  const local = refusal(() => loadBrokerConfig({}, env("/var/mq/kv.sqlite"), []));
  assert.equal(local.setting, "kvPath");
  assert.match(local.message, /etcd:\/\//);
});
