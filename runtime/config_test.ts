// Settings: sources in order (file, environment, flags), and refusals with a clear message.
import assert from "node:assert/strict";
import { ConfigError, loadBrokerConfig, SETTINGS } from "./config.ts";
import { zeroFillSegments } from "../storage/config.ts";

Deno.test("config: file, then environment, then flags; later wins", () => {
  const c = loadBrokerConfig(
    { port: 9000, leaseTtlMs: 5000 },
    { PORT: "9001", MQ_LEASE_TTL_MS: "6000", MQ_REPLICATION_MODE: "SYNC" },
    ["--port", "9002"],
  );
  assert.equal(c.port, 9002);
  assert.equal(c.leaseTtlMs, 6000);
  assert.equal(c.replicationMode, "SYNC");
  assert.equal(c.haMode, "none");
  assert.equal(c.haAdvertisedHost, c.haHost, "haAdvertisedHost defaults to haHost");
});

Deno.test("config: replication settings are checked", () => {
  const bad: [Record<string, string>, RegExp][] = [
    [{ MQ_HA_MODE: "raft" }, /haMode must be none or cluster/],
    [{ MQ_REPLICATION_MODE: "SEMI" }, /replicationMode must be ASYNC or SYNC/],
    [{ MQ_IN_SYNC_REPLICAS: "0" }, /inSyncReplicas must be an integer >= 1/],
    [{ MQ_HA_MODE: "cluster" }, /KV Connect URL/],
    [{ MQ_BROKER_ID: "one" }, /must be an integer/],
  ];
  for (const [env, message] of bad) {
    assert.throws(() => loadBrokerConfig({}, env, []), (err: Error) => {
      assert.ok(err instanceof ConfigError, String(err));
      assert.match(err.message, message);
      return true;
    });
  }
  const ok = loadBrokerConfig({}, { MQ_HA_MODE: "cluster", MQ_KV: "http://127.0.0.1:4510" }, []);
  assert.equal(ok.haMode, "cluster");
});

Deno.test("config: every setting has a distinct flag and environment variable", () => {
  assert.equal(new Set(SETTINGS.map((s) => s.flag)).size, SETTINGS.length);
  assert.equal(new Set(SETTINGS.map((s) => s.env)).size, SETTINGS.length);
});

Deno.test("config: segments are zero-filled under SYNC_FLUSH only, unless set", () => {
  const fill = (env: Record<string, string>) =>
    zeroFillSegments(loadBrokerConfig({}, env, []).store);
  assert.equal(fill({}), false, "ASYNC_FLUSH (the default): no second write of every byte");
  assert.equal(fill({ MQ_FLUSH_DISK_TYPE: "SYNC_FLUSH" }), true);
  assert.equal(fill({ MQ_FLUSH_DISK_TYPE: "SYNC_FLUSH", MQ_SEGMENT_ZERO_FILL: "false" }), false);
  assert.equal(fill({ MQ_SEGMENT_ZERO_FILL: "true" }), true);
});

Deno.test("config: a TLS certificate needs its key, and the other way round", () => {
  const ok = loadBrokerConfig({}, {
    MQ_HTTP_TLS_CERT_FILE: "/etc/mq/broker.pem",
    MQ_HTTP_TLS_KEY_FILE: "/etc/mq/broker.key",
  }, []);
  assert.equal(ok.httpTlsCertFile, "/etc/mq/broker.pem");
  for (
    const [env, missing] of [
      [{ MQ_HTTP_TLS_CERT_FILE: "/etc/mq/broker.pem" }, "httpTlsKeyFile"],
      [{ MQ_HTTP_TLS_KEY_FILE: "/etc/mq/broker.key" }, "httpTlsCertFile"],
      [{ MQ_GRPC_TLS_CERT_FILE: "/etc/mq/grpc.pem" }, "grpcTlsKeyFile"],
    ] as const
  ) {
    assert.throws(() => loadBrokerConfig({}, env, []), (err: Error) => {
      assert.ok(err instanceof ConfigError, String(err));
      assert.equal(err.setting, missing);
      assert.match(err.message, new RegExp(`needs ${missing} too`));
      return true;
    });
  }
});
