import assert from "node:assert/strict";
import { AllocateMessageQueueAveragely, type MessageQueue } from "./allocate.ts";
import {
  ConsumerMembership,
  type HeartbeatData,
  MembershipError,
  type MembershipErrorCode,
  type QueueRef,
} from "./membership.ts";

const G = "GID_orders";
const T = "TopicA";

/** A membership on a manual clock; `clock.ms` is the time heartbeats are stamped with. */
function setup(options: { membersMax?: number } = {}) {
  const clock = { ms: 1_000_000 };
  const membership = new ConsumerMembership({ nowMs: () => clock.ms, ...options });
  return { clock, membership };
}

function hb(clientId: string, topics: string[] = [T], extra: Partial<HeartbeatData> = {}) {
  return { clientId, subscriptions: topics.map((topic) => ({ topic })), ...extra };
}

function queues(brokerName: string, count: number): QueueRef[] {
  return Array.from({ length: count }, (_, queueId) => ({ brokerName, queueId }));
}

function ids(mqs: readonly MessageQueue[]): string[] {
  return mqs.map((mq) => `${mq.brokerName}:${mq.queueId}`);
}

function assertCode(fn: () => unknown, code: MembershipErrorCode) {
  assert.throws(fn, (e) => e instanceof MembershipError && e.code === code);
}

Deno.test("ConsumerMembership heartbeat(), unregister() and generation()", async (t) => {
  await t.step("join and leave change generation; a plain refresh does not", () => {
    const { membership: m } = setup();
    assert.equal(m.generation(G), 0);
    assert.equal(m.heartbeat(G, hb("c1")), true);
    const g1 = m.generation(G);
    assert.ok(g1 > 0);
    assert.equal(m.heartbeat(G, hb("c1")), false);
    assert.equal(m.generation(G), g1);
    assert.equal(m.heartbeat(G, hb("c0")), true);
    const g2 = m.generation(G);
    assert.ok(g2 > g1);
    assert.deepEqual(m.members(G), ["c0", "c1"]);
    assert.equal(m.unregister(G, "c1"), true);
    assert.ok(m.generation(G) > g2);
    assert.deepEqual(m.members(G), ["c0"]);
    assert.equal(m.unregister(G, "c1"), false);
  });

  await t.step("changed subscriptions or strategy count as a change", () => {
    const { membership: m } = setup();
    m.heartbeat(G, hb("c1"));
    const g1 = m.generation(G);
    assert.equal(m.heartbeat(G, hb("c1", [T, "TopicB"])), true);
    const g2 = m.generation(G);
    assert.ok(g2 > g1);
    assert.equal(
      m.heartbeat(G, { clientId: "c1", subscriptions: [{ topic: "TopicB" }, { topic: T }] }),
      false,
    );
    assert.equal(m.heartbeat(G, hb("c1", [T, "TopicB"], { strategy: "AVG_BY_CIRCLE" })), true);
    assert.ok(m.generation(G) > g2);
  });

  await t.step("a change in one group leaves another's generation alone", () => {
    const { membership: m } = setup();
    m.heartbeat(G, hb("c1"));
    const g = m.generation(G);
    m.heartbeat("GID_other", hb("c2"));
    assert.equal(m.generation(G), g);
  });

  await t.step("a group that empties and refills gets a larger generation", () => {
    const { membership: m } = setup();
    m.heartbeat(G, hb("c1"));
    m.unregister(G, "c1");
    const gone = m.generation(G);
    assert.equal(gone, 0);
    m.heartbeat(G, hb("c1"));
    assert.ok(m.generation(G) > 2);
  });
});

Deno.test("ConsumerMembership.expire() removes a member silent for exactly memberTimeoutMs", () => {
  const { clock, membership: m } = setup();
  m.heartbeat(G, hb("c1"));
  m.heartbeat(G, hb("c2"));
  const start = clock.ms;
  clock.ms = start + 60_000;
  m.heartbeat(G, hb("c2")); // c2 refreshes; c1 stays silent
  const g = m.generation(G);
  assert.deepEqual(m.expire(start + 119_999), []);
  assert.deepEqual(m.members(G), ["c1", "c2"]);
  assert.equal(m.generation(G), g);
  assert.deepEqual(m.expire(start + 120_000), [G]);
  assert.deepEqual(m.members(G), ["c2"]);
  assert.ok(m.generation(G) > g);
  assert.deepEqual(m.expire(start + 179_999), []);
  assert.deepEqual(m.expire(start + 180_000), [G]);
  assert.deepEqual(m.members(G), []);
});

Deno.test("ConsumerMembership.assignment()", async (t) => {
  const Q8 = queues("broker-a", 8);

  await t.step("matches AllocateMessageQueueAveragely for 3 members and 8 queues", () => {
    const { membership: m } = setup();
    for (const c of ["c2", "c0", "c1"]) m.heartbeat(G, hb(c));
    const mqAll = Q8.map((q) => ({ topic: T, ...q }));
    const cidAll = ["c0", "c1", "c2"];
    const avg = new AllocateMessageQueueAveragely();
    for (const c of cidAll) {
      const expected = avg.allocate({ consumerGroup: G, currentCid: c, mqAll, cidAll });
      assert.deepEqual(m.assignment(G, c, T, Q8), expected);
    }
    assert.deepEqual(ids(m.assignment(G, "c0", T, Q8)), ["broker-a:0", "broker-a:1", "broker-a:2"]);
    assert.deepEqual(ids(m.assignment(G, "c1", T, Q8)), ["broker-a:3", "broker-a:4", "broker-a:5"]);
    assert.deepEqual(ids(m.assignment(G, "c2", T, Q8)), ["broker-a:6", "broker-a:7"]);
  });

  await t.step("changes when a member leaves", () => {
    const { membership: m } = setup();
    for (const c of ["c0", "c1", "c2"]) m.heartbeat(G, hb(c));
    m.unregister(G, "c1");
    assert.deepEqual(ids(m.assignment(G, "c0", T, Q8)), [0, 1, 2, 3].map((i) => `broker-a:${i}`));
    assert.deepEqual(ids(m.assignment(G, "c2", T, Q8)), [4, 5, 6, 7].map((i) => `broker-a:${i}`));
    assert.deepEqual(m.assignment(G, "c1", T, Q8), []);
  });

  await t.step("an unsubscribed member gets nothing and does not count", () => {
    const { membership: m } = setup();
    m.heartbeat(G, hb("c0"));
    m.heartbeat(G, hb("c1", ["TopicB"]));
    assert.deepEqual(m.assignment(G, "c1", T, Q8), []);
    assert.equal(m.assignment(G, "c0", T, Q8).length, 8);
    assert.deepEqual(m.assignment(G, "nobody", T, Q8), []);
    assert.deepEqual(m.assignment(G, "c0", T, []), []);
  });

  await t.step("uses the strategy the member sent", () => {
    const { membership: m } = setup();
    for (const c of ["c0", "c1", "c2"]) m.heartbeat(G, hb(c, [T], { strategy: "AVG_BY_CIRCLE" }));
    assert.deepEqual(ids(m.assignment(G, "c0", T, Q8)), ["broker-a:0", "broker-a:3", "broker-a:6"]);
    m.heartbeat(G, hb("c0", [T], { strategy: "CONFIG", configQueues: [5, 1, 99] }));
    assert.deepEqual(ids(m.assignment(G, "c0", T, Q8)), ["broker-a:1", "broker-a:5"]);
  });

  await t.step("MACHINE_ROOM_NEARBY keeps a room's queues in the room", () => {
    const { membership: m } = setup();
    const rooms = [...queues("east@b1", 2), ...queues("west@b2", 2)];
    m.heartbeat(G, hb("c0", [T], { strategy: "MACHINE_ROOM_NEARBY", room: "east" }));
    m.heartbeat(G, hb("c1", [T], { strategy: "MACHINE_ROOM_NEARBY", room: "west" }));
    assert.deepEqual(ids(m.assignment(G, "c0", T, rooms)), ["east@b1:0", "east@b1:1"]);
    assert.deepEqual(ids(m.assignment(G, "c1", T, rooms)), ["west@b2:0", "west@b2:1"]);
  });

  await t.step("MACHINE_ROOM shares the queues of the members' rooms only", () => {
    const { membership: m } = setup();
    const rooms = [...queues("east@b1", 2), ...queues("north@b3", 2)];
    m.heartbeat(G, hb("c0", [T], { strategy: "MACHINE_ROOM", room: "east" }));
    m.heartbeat(G, hb("c1", [T], { strategy: "MACHINE_ROOM", room: "east" }));
    assert.deepEqual(ids(m.assignment(G, "c0", T, rooms)), ["east@b1:0"]);
    assert.deepEqual(ids(m.assignment(G, "c1", T, rooms)), ["east@b1:1"]);
  });
});

Deno.test("ConsumerMembership lock(), unlock() and lockHolder()", async (t) => {
  function locked() {
    const { clock, membership: m } = setup();
    m.heartbeat(G, hb("c1"));
    m.heartbeat(G, hb("c2"));
    return { clock, m, t0: clock.ms };
  }

  await t.step("a lock is exclusive until unlocked", () => {
    const { m, t0 } = locked();
    assert.deepEqual(m.lock(G, "c1", T, [2, 0, 0], t0), [0, 2]);
    assert.deepEqual(m.lock(G, "c2", T, [0, 1, 2], t0 + 1), [1]);
    assert.equal(m.lockHolder(G, T, 0, t0 + 1), "c1");
    assert.equal(m.lockHolder(G, T, 1, t0 + 1), "c2");
    m.unlock(G, "c2", T, [0]); // not its lock: ignored
    assert.equal(m.lockHolder(G, T, 0, t0 + 1), "c1");
    m.unlock(G, "c1", T, [0]);
    assert.equal(m.lockHolder(G, T, 0, t0 + 1), undefined);
    assert.deepEqual(m.lock(G, "c2", T, [0], t0 + 2), [0]);
  });

  await t.step("a lock expires after exactly 60 s unless renewed", () => {
    const { m, t0 } = locked();
    m.lock(G, "c1", T, [0, 1], t0);
    assert.deepEqual(m.lock(G, "c1", T, [1], t0 + 40_000), [1]); // renew queue 1 only
    assert.equal(m.lockHolder(G, T, 0, t0 + 59_999), "c1");
    assert.deepEqual(m.lock(G, "c2", T, [0, 1], t0 + 59_999), []);
    assert.equal(m.lockHolder(G, T, 0, t0 + 60_000), undefined);
    assert.equal(m.lockHolder(G, T, 1, t0 + 60_000), "c1");
    assert.deepEqual(m.lock(G, "c2", T, [0, 1], t0 + 60_000), [0]);
    assert.equal(m.lockHolder(G, T, 0, t0 + 60_000), "c2");
    assert.deepEqual(m.lock(G, "c2", T, [1], t0 + 100_000), [1]);
  });

  await t.step("expire() releases an expired member's locks", () => {
    const { clock, m, t0 } = locked();
    m.lock(G, "c1", T, [0], t0);
    clock.ms = t0 + 100_000;
    m.heartbeat(G, hb("c2"));
    m.lock(G, "c1", T, [0], t0 + 100_000); // renewed lock, silent member
    assert.deepEqual(m.expire(t0 + 120_000), [G]);
    assert.equal(m.lockHolder(G, T, 0, t0 + 120_000), undefined);
    assert.deepEqual(m.lock(G, "c2", T, [0], t0 + 120_000), [0]);
  });

  await t.step("a client that is no member locks nothing", () => {
    const { m, t0 } = locked();
    assert.deepEqual(m.lock(G, "ghost", T, [0], t0), []);
    assert.equal(m.lockHolder(G, T, 0, t0), undefined);
  });
});

Deno.test("ConsumerMembership refuses bad input with MembershipError", async (t) => {
  await t.step("client ids", () => {
    const { membership: m } = setup();
    assertCode(() => m.heartbeat(G, hb("")), "CLIENT_ID_ILLEGAL");
    assertCode(() => m.heartbeat(G, hb("a b")), "CLIENT_ID_ILLEGAL");
    assertCode(() => m.heartbeat(G, hb("é")), "CLIENT_ID_ILLEGAL");
    assertCode(() => m.heartbeat(G, hb("x".repeat(256))), "CLIENT_ID_ILLEGAL");
    assert.equal(m.heartbeat(G, hb("x".repeat(255))), true);
    assert.equal(m.heartbeat(G, hb("192.168.0.1@4242#1")), true);
  });

  await t.step("subscriptions", () => {
    const { membership: m } = setup();
    assertCode(() => m.heartbeat(G, hb("c", ["bad topic"])), "SUBSCRIPTION_ILLEGAL");
    assertCode(() => m.heartbeat(G, hb("c", [T, T])), "SUBSCRIPTION_ILLEGAL");
    const many = Array.from({ length: 65 }, (_, i) => `T${i}`);
    assertCode(() => m.heartbeat(G, hb("c", many)), "SUBSCRIPTION_ILLEGAL");
    assert.equal(m.heartbeat(G, hb("c", many.slice(0, 64))), true);
    assertCode(
      () => m.heartbeat(G, { clientId: "c", subscriptions: [{ topic: T, tags: "" }] }),
      "SUBSCRIPTION_ILLEGAL",
    );
    assertCode(
      () => m.heartbeat(G, { clientId: "c", subscriptions: null as unknown as [] }),
      "SUBSCRIPTION_ILLEGAL",
    );
  });

  await t.step("strategies", () => {
    const { membership: m } = setup();
    const bad = { strategy: "RANDOM" } as unknown as Partial<HeartbeatData>;
    assertCode(() => m.heartbeat(G, hb("c", [T], bad)), "STRATEGY_ILLEGAL");
    assertCode(
      () => m.heartbeat(G, hb("c", [T], { strategy: "MACHINE_ROOM" })),
      "STRATEGY_ILLEGAL",
    );
    assertCode(
      () => m.heartbeat(G, hb("c", [T], { strategy: "MACHINE_ROOM_NEARBY", room: "a@b" })),
      "STRATEGY_ILLEGAL",
    );
    assertCode(
      () => m.heartbeat(G, hb("c", [T], { strategy: "CONFIG", configQueues: [-1] })),
      "STRATEGY_ILLEGAL",
    );
    assert.deepEqual(m.members(G), []);
  });

  await t.step("membersMax counts members over all groups", () => {
    const { membership: m } = setup({ membersMax: 2 });
    m.heartbeat(G, hb("c1"));
    m.heartbeat("GID_other", hb("c1"));
    assertCode(() => m.heartbeat(G, hb("c2")), "MEMBERS_MAX");
    assert.equal(m.heartbeat(G, hb("c1")), false); // refreshing an existing member is fine
    m.unregister("GID_other", "c1");
    assert.equal(m.heartbeat(G, hb("c2")), true);
  });

  await t.step("groups, topics and queue ids", () => {
    const { membership: m, clock } = setup();
    assertCode(() => m.heartbeat("bad group", hb("c")), "GROUP_ILLEGAL");
    m.heartbeat(G, hb("c"));
    assertCode(() => m.lock(G, "c", "a/b", [0], clock.ms), "TOPIC_ILLEGAL");
    assertCode(() => m.lock(G, "c", T, [1.5], clock.ms), "QUEUE_ID_ILLEGAL");
    assertCode(() => m.unlock(G, "c", T, [-1]), "QUEUE_ID_ILLEGAL");
  });
});
