// The cluster router's small parts: router tokens (reversible; anything else refused with the
// broker's own error), the fault tracker, the settings read from the environment.
import assert from "node:assert/strict";
import { unwrapReceiptHandle, unwrapToken, unwrapTransactionId, wrapToken } from "./handles.ts";
import { BrokerError } from "../protocol/errors.ts";
import { FaultTracker, isGroupFailure, isRetryElsewhere, isSendElsewhere } from "./fault.ts";
import { clusterRouterSettingsFromEnv } from "../config/cluster_router_settings.ts";

Deno.test("wrapToken/unwrapToken round-trip; malformed tokens are the broker's typed errors", () => {
  for (const group of ["g-a", "broker_α", "room@b1", "x".repeat(100)]) {
    for (const token of ["abc", "a.b.c", "@x.y", "0A1B2C"]) {
      assert.deepEqual(unwrapToken(wrapToken(group, token)), { group, token });
    }
  }
  for (const bad of ["", "abc", "@", "@.", "@Zw.", "@!!.x", "@\u00ff.x", "@gA=.x"]) {
    assert.equal(unwrapToken(bad), undefined, bad);
    assert.throws(
      () => unwrapReceiptHandle(bad, "cg"),
      (e) => e instanceof BrokerError && e.code === "RECEIPT_HANDLE_UNKNOWN",
    );
    assert.throws(
      () => unwrapTransactionId(bad),
      (e) => e instanceof BrokerError && e.code === "TRANSACTION_NOT_FOUND",
    );
  }
});

Deno.test("FaultTracker: a fault is the master's at its epoch; a higher epoch is available at once", () => {
  const now = 0;
  const faults = new FaultTracker(10_000, true, () => now);
  faults.failed("a", 3);
  assert.equal(faults.available("a", 3), false, "the same master, still in backoff");
  assert.equal(faults.available("a", 2), false, "an older route: still in backoff");
  assert.equal(faults.available("a", 4), true, "its slave took over at epoch 4");
  assert.equal(faults.available("a", 3), true, "the fault is gone with it");
  faults.failed("b", 1);
  assert.equal(faults.available("b", 1), false);
});

Deno.test("FaultTracker: a failed group is unavailable for the backoff; 4xx and 504 are not group faults", () => {
  let now = 0;
  const faults = new FaultTracker(1000, true, () => now);
  faults.failed("a");
  assert.equal(faults.available("a"), false);
  now = 999;
  assert.equal(faults.available("a"), false);
  now = 1000;
  assert.equal(faults.available("a"), true);
  faults.failed("a");
  faults.succeeded("a");
  assert.equal(faults.available("a"), true);
  const off = new FaultTracker(1000, false, () => now);
  off.failed("a");
  assert.equal(off.available("a"), true);
  assert.equal(isGroupFailure(new TypeError("fetch failed")), true);
  assert.equal(isGroupFailure(new BrokerError("NOT_LEADER", "x")), true);
  assert.equal(isGroupFailure(new BrokerError("BROKER_UNAVAILABLE", "x")), true);
  assert.equal(isGroupFailure(new BrokerError("REPLICATION_TIMEOUT", "x")), false);
  assert.equal(isGroupFailure(new BrokerError("QUEUE_NOT_FOUND", "x")), false);
  // The caller's own abort or timeout is not the group's fault (review #10).
  assert.equal(isGroupFailure(new DOMException("gone", "AbortError")), false);
  assert.equal(isGroupFailure(new DOMException("late", "TimeoutError")), false);
  assert.equal(isRetryElsewhere(new BrokerError("TOPIC_PERMISSION_DENIED", "drained")), true);
  assert.equal(isRetryElsewhere(new BrokerError("TOPIC_NOT_FOUND", "x")), true);
  assert.equal(isRetryElsewhere(new BrokerError("INVALID_PARAMETER", "x")), false);
});

Deno.test("clusterRouterSettingsFromEnv reads the rows, defaults and checks included", () => {
  assert.deepEqual(clusterRouterSettingsFromEnv({}), {
    clusterSendRetryTimes: 2,
    clusterSendLatencyFaultEnable: true,
    clusterFaultBackoffMs: 10_000,
    clusterPopPollSliceMs: 1000,
    clusterAutoCreateTopicEnable: true,
    clusterRotationKeysMax: 10_000,
    clusterRouteCacheTopicsMax: 10_000,
    clusterCheckRelayWaitMs: 10_000,
    clusterCheckRelayMax: 16,
    clusterCheckRelayRetryMs: 1000,
    clusterProduceCoalesceEnable: true,
    clusterProduceCoalesceItemsMax: 64,
    clusterProduceCoalesceBytesMax: 256 * 1024,
    clusterProduceCoalesceInFlightMax: 1,
  });
  const set = clusterRouterSettingsFromEnv({
    MQ_CLUSTER_SEND_RETRY_TIMES: "0",
    MQ_CLUSTER_SEND_LATENCY_FAULT_ENABLE: "false",
  });
  assert.equal(set.clusterSendRetryTimes, 0);
  assert.equal(set.clusterSendLatencyFaultEnable, false);
  assert.throws(() => clusterRouterSettingsFromEnv({ MQ_CLUSTER_POP_POLL_SLICE_MS: "0" }));
});

Deno.test("isSendElsewhere: only what no group can have stored goes to another group", () => {
  const unreachable = (requestSent: false | "unknown") =>
    new BrokerError("BROKER_UNAVAILABLE", "Cannot reach", { requestSent });
  assert.equal(isSendElsewhere(unreachable(false)), true); // connect refused: nothing left
  assert.equal(isSendElsewhere(unreachable("unknown")), false); // reset after sending
  assert.equal(isSendElsewhere(new BrokerError("NOT_LEADER", "deposed")), true);
  assert.equal(isSendElsewhere(new BrokerError("TOPIC_PERMISSION_DENIED", "drained")), true);
  assert.equal(isSendElsewhere(new BrokerError("INTERNAL", "after the write?")), false);
  assert.equal(isSendElsewhere(new BrokerError("REPLICATION_TIMEOUT", "written")), false);
  assert.equal(isSendElsewhere(new TypeError("fetch failed")), false);
});
