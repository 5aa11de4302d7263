import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  AllocateArgumentError,
  type AllocateContext,
  AllocateMachineRoomNearby,
  AllocateMessageQueueAveragely,
  AllocateMessageQueueAveragelyByCircle,
  AllocateMessageQueueByConfig,
  AllocateMessageQueueByMachineRoom,
  AllocateMessageQueueConsistentHash,
  type AllocateMessageQueueStrategy,
  type MachineRoomResolver,
  type MessageQueue,
  messageQueueToString,
  sortClientIds,
  sortMessageQueues,
} from "./allocate.ts";
import { md5Hash } from "./consistent_hash_router.ts";

const GROUP = "GID_test";

/** `count` queues of one topic on one broker. */
function queues(brokerName: string, count: number, topic = "T"): MessageQueue[] {
  return Array.from({ length: count }, (_, queueId) => ({ topic, brokerName, queueId }));
}

function label(mq: MessageQueue): string {
  return `${mq.brokerName}:${mq.queueId}`;
}

function allocateLabels(
  strategy: AllocateMessageQueueStrategy,
  currentCid: string,
  mqAll: readonly MessageQueue[],
  cidAll: readonly string[],
): string[] {
  return strategy.allocate({ consumerGroup: GROUP, currentCid, mqAll, cidAll }).map(label);
}

/** Every consumer's share, keyed by client id in cidAll order. */
function assignment(
  strategy: AllocateMessageQueueStrategy,
  mqAll: readonly MessageQueue[],
  cidAll: readonly string[],
): Record<string, string[]> {
  return Object.fromEntries(
    cidAll.map((cid) => [cid, allocateLabels(strategy, cid, mqAll, cidAll)]),
  );
}

/** Asserts that the shares partition `expected`: each queue to exactly one consumer. */
function assertPartition(shares: Record<string, string[]>, expected: readonly MessageQueue[]) {
  const all = Object.values(shares).flat();
  assert.deepEqual([...all].sort(), expected.map(label).sort());
}

/** Same items, another order: what a consumer that listed them differently would pass. */
function reversed<T>(items: readonly T[]): T[] {
  return [...items].reverse();
}

const B8 = queues("b", 8);
const C3 = ["c0", "c1", "c2"];

Deno.test("AllocateMessageQueueAveragely.allocate() gives contiguous runs, the extra queues to the first N % C consumers", () => {
  const avg = new AllocateMessageQueueAveragely();
  const cases: Array<[number, string[], Record<string, number[]>]> = [
    [8, C3, { c0: [0, 1, 2], c1: [3, 4, 5], c2: [6, 7] }],
    [3, ["c0", "c1", "c2", "c3", "c4"], { c0: [0], c1: [1], c2: [2], c3: [], c4: [] }],
    [6, C3, { c0: [0, 1], c1: [2, 3], c2: [4, 5] }],
    [10, ["c0", "c1", "c2", "c3"], { c0: [0, 1, 2], c1: [3, 4, 5], c2: [6, 7], c3: [8, 9] }],
    [3, C3, { c0: [0], c1: [1], c2: [2] }],
    [1, ["c0"], { c0: [0] }],
    [1, ["c0", "c1"], { c0: [0], c1: [] }],
    [5, ["c0"], { c0: [0, 1, 2, 3, 4] }],
  ];
  for (const [count, cidAll, expected] of cases) {
    const mqAll = queues("b", count);
    const shares = assignment(avg, mqAll, cidAll);
    const want = Object.fromEntries(
      Object.entries(expected).map(([cid, ids]) => [cid, ids.map((id) => `b:${id}`)]),
    );
    assert.deepEqual(shares, want, `${count} queues, ${cidAll.length} consumers`);
  }
});

Deno.test("AllocateMessageQueueAveragely.allocate() follows a consumer leaving and joining", () => {
  const avg = new AllocateMessageQueueAveragely();
  assert.deepEqual(assignment(avg, B8, ["c0", "c2"]), {
    c0: ["b:0", "b:1", "b:2", "b:3"],
    c2: ["b:4", "b:5", "b:6", "b:7"],
  });
  assert.deepEqual(assignment(avg, B8, ["c0", "c1", "c2", "c3"]), {
    c0: ["b:0", "b:1"],
    c1: ["b:2", "b:3"],
    c2: ["b:4", "b:5"],
    c3: ["b:6", "b:7"],
  });
});

Deno.test("AllocateMessageQueueAveragelyByCircle.allocate() deals queues round robin", () => {
  const circle = new AllocateMessageQueueAveragelyByCircle();
  assert.deepEqual(assignment(circle, B8, C3), {
    c0: ["b:0", "b:3", "b:6"],
    c1: ["b:1", "b:4", "b:7"],
    c2: ["b:2", "b:5"],
  });
  assert.deepEqual(assignment(circle, queues("b", 3), ["c0", "c1", "c2", "c3", "c4"]), {
    c0: ["b:0"],
    c1: ["b:1"],
    c2: ["b:2"],
    c3: [],
    c4: [],
  });
  // c1 leaves, then c3 joins.
  assert.deepEqual(assignment(circle, B8, ["c0", "c2"]), {
    c0: ["b:0", "b:2", "b:4", "b:6"],
    c2: ["b:1", "b:3", "b:5", "b:7"],
  });
  assert.deepEqual(assignment(circle, B8, ["c0", "c1", "c2", "c3"]), {
    c0: ["b:0", "b:4"],
    c1: ["b:1", "b:5"],
    c2: ["b:2", "b:6"],
    c3: ["b:3", "b:7"],
  });
});

Deno.test("allocate() sorts queues by topic, brokerName, queueId and client ids as Java strings", () => {
  const mqAll: MessageQueue[] = [
    { topic: "T", brokerName: "broker-b", queueId: 0 },
    { topic: "T", brokerName: "broker-a", queueId: 10 },
    { topic: "S", brokerName: "broker-z", queueId: 0 },
    { topic: "T", brokerName: "broker-a", queueId: 9 },
    { topic: "T", brokerName: "broker-a", queueId: 2 },
  ];
  const sorted = sortMessageQueues(mqAll).map((mq) => `${mq.topic}/${label(mq)}`);
  assert.deepEqual(sorted, [
    "S/broker-z:0",
    "T/broker-a:2",
    "T/broker-a:9",
    "T/broker-a:10",
    "T/broker-b:0",
  ]);
  // UTF-16 code unit order, not numeric or locale order: "10..." < "9...", "Z" < "a".
  const cidAll = ["b", "10.0.0.9@1", "a", "Z", "10.0.0.10@1"];
  assert.deepEqual(sortClientIds(cidAll), ["10.0.0.10@1", "10.0.0.9@1", "Z", "a", "b"]);
  assert.deepEqual(cidAll, ["b", "10.0.0.9@1", "a", "Z", "10.0.0.10@1"]); // not mutated

  const avg = new AllocateMessageQueueAveragely();
  assert.deepEqual(allocateLabels(avg, "10.0.0.10@1", mqAll, cidAll), ["broker-z:0"]);
  assert.deepEqual(allocateLabels(avg, "b", mqAll, cidAll), ["broker-b:0"]);
  assert.deepEqual(allocateLabels(avg, "Z", mqAll, cidAll), ["broker-a:9"]);
});

Deno.test("allocate() gives every queue to exactly one consumer, whatever order each consumer lists them in", () => {
  const strategies = [
    new AllocateMessageQueueAveragely(),
    new AllocateMessageQueueAveragelyByCircle(),
    new AllocateMessageQueueConsistentHash(),
    new AllocateMessageQueueConsistentHash({ virtualNodeCnt: 1 }),
  ];
  for (const strategy of strategies) {
    for (let queueCount = 1; queueCount <= 17; queueCount++) {
      for (let consumerCount = 1; consumerCount <= 7; consumerCount++) {
        const mqAll = [...queues("broker-b", queueCount), ...queues("broker-a", queueCount % 4)];
        const cidAll = Array.from({ length: consumerCount }, (_, i) => `10.0.0.${i}@${100 + i}`);
        // Odd consumers see the lists reversed; the sort inside makes them agree.
        const shares = Object.fromEntries(cidAll.map((cid, i) => {
          const ctx: AllocateContext = {
            consumerGroup: GROUP,
            currentCid: cid,
            mqAll: i % 2 === 0 ? mqAll : reversed(mqAll),
            cidAll: i % 2 === 0 ? cidAll : reversed(cidAll),
          };
          return [cid, strategy.allocate(ctx).map(label)];
        }));
        assertPartition(shares, mqAll);
      }
    }
  }
});

Deno.test("allocate() gives nothing to a consumer missing from cidAll", () => {
  const strategies = [
    new AllocateMessageQueueAveragely(),
    new AllocateMessageQueueAveragelyByCircle(),
    new AllocateMessageQueueConsistentHash(),
    new AllocateMessageQueueByMachineRoom(["hz"]),
    new AllocateMachineRoomNearby(new AllocateMessageQueueAveragely(), {
      brokerDeployIn: () => "hz",
      consumerDeployIn: () => "hz",
    }),
  ];
  for (const strategy of strategies) {
    assert.deepEqual(allocateLabels(strategy, "c9", queues("hz@b", 4), C3), [], strategy.name);
  }
});

Deno.test("allocate() throws AllocateArgumentError on an empty currentCid, mqAll or cidAll, as RocketMQ's check()", () => {
  const strategies = [
    new AllocateMessageQueueAveragely(),
    new AllocateMessageQueueAveragelyByCircle(),
    new AllocateMessageQueueConsistentHash(),
    new AllocateMessageQueueByMachineRoom(["hz"]),
    new AllocateMachineRoomNearby(new AllocateMessageQueueAveragely(), {
      brokerDeployIn: () => "hz",
      consumerDeployIn: () => "hz",
    }),
  ];
  const cases: Array<[AllocateContext, string]> = [
    [{ consumerGroup: GROUP, currentCid: "", mqAll: B8, cidAll: C3 }, "CURRENT_CID_EMPTY"],
    [{ consumerGroup: GROUP, currentCid: "c0", mqAll: [], cidAll: C3 }, "MQ_ALL_EMPTY"],
    [{ consumerGroup: GROUP, currentCid: "c0", mqAll: B8, cidAll: [] }, "CID_ALL_EMPTY"],
    // Checked in RocketMQ's order: the empty currentCid wins.
    [{ consumerGroup: GROUP, currentCid: "", mqAll: [], cidAll: [] }, "CURRENT_CID_EMPTY"],
  ];
  for (const strategy of strategies) {
    for (const [ctx, code] of cases) {
      assert.throws(
        () => strategy.allocate(ctx),
        (error) => error instanceof AllocateArgumentError && error.code === code,
        `${strategy.name} ${code}`,
      );
    }
  }
});

Deno.test("allocate() treats a queue listed twice as one, as RebalanceImpl's Set does", () => {
  const avg = new AllocateMessageQueueAveragely();
  const mqAll = [...queues("b", 4), ...queues("b", 4)];
  assert.deepEqual(assignment(avg, mqAll, ["c0", "c1"]), {
    c0: ["b:0", "b:1"],
    c1: ["b:2", "b:3"],
  });
});

Deno.test("strategy.name is RocketMQ's getName()", () => {
  const resolver: MachineRoomResolver = { brokerDeployIn: () => "x", consumerDeployIn: () => "x" };
  const circle = new AllocateMessageQueueAveragelyByCircle();
  assert.deepEqual(
    [
      new AllocateMessageQueueAveragely(),
      circle,
      new AllocateMessageQueueConsistentHash(),
      new AllocateMessageQueueByConfig([]),
      new AllocateMessageQueueByMachineRoom([]),
      new AllocateMachineRoomNearby(circle, resolver),
    ].map((strategy) => strategy.name),
    [
      "AVG",
      "AVG_BY_CIRCLE",
      "CONSISTENT_HASH",
      "CONFIG",
      "MACHINE_ROOM",
      "MACHINE_ROOM_NEARBY-AVG_BY_CIRCLE",
    ],
  );
});

Deno.test("AllocateMessageQueueByConfig.allocate() returns its list whatever the group, unchecked as in RocketMQ", () => {
  const list = [{ topic: "T", brokerName: "b", queueId: 5 }, {
    topic: "T",
    brokerName: "a",
    queueId: 1,
  }];
  const config = new AllocateMessageQueueByConfig(list);
  assert.deepEqual(allocateLabels(config, "c0", B8, C3), ["b:5", "a:1"]);
  assert.deepEqual(allocateLabels(config, "c9", B8, C3), ["b:5", "a:1"]);
  assert.deepEqual(allocateLabels(config, "", [], []), ["b:5", "a:1"]);
  const first = config.allocate({ consumerGroup: GROUP, currentCid: "c0", mqAll: B8, cidAll: C3 });
  first.pop();
  list.pop();
  assert.deepEqual(allocateLabels(config, "c0", B8, C3), ["b:5", "a:1"]);
});

Deno.test("AllocateMessageQueueByMachineRoom.allocate() shares the configured rooms' queues, extras from the tail", () => {
  const mqAll = [
    ...queues("hz@broker-a", 4),
    ...queues("sh@broker-c", 2), // room not configured
    ...queues("hz@broker-b", 4),
    ...queues("broker-d", 2), // no room
    ...queues("hz@x@y", 1), // three parts
    ...queues("hz@", 1), // Java's split drops the trailing "": one part
  ];
  const byRoom = new AllocateMessageQueueByMachineRoom(["hz", "bj"]);
  // 8 queues in hz, 3 consumers: 8 / 3 = 2 each from 2·i, and 8 % 3 = 2 extras: 6 and 7.
  const shares = assignment(byRoom, mqAll, C3);
  assert.deepEqual(shares, {
    c0: ["hz@broker-a:0", "hz@broker-a:1", "hz@broker-b:2"],
    c1: ["hz@broker-a:2", "hz@broker-a:3", "hz@broker-b:3"],
    c2: ["hz@broker-b:0", "hz@broker-b:1"],
  });
  assertPartition(shares, [...queues("hz@broker-a", 4), ...queues("hz@broker-b", 4)]);

  // "hz@broker-e@" splits into two parts in Java, so it counts.
  assert.deepEqual(allocateLabels(byRoom, "c0", queues("hz@broker-e@", 1), ["c0"]), [
    "hz@broker-e@:0",
  ]);
  // 3 queues, 5 consumers: none each, plus one extra for the first three.
  assert.deepEqual(assignment(byRoom, queues("bj@b", 3), ["c0", "c1", "c2", "c3", "c4"]), {
    c0: ["bj@b:0"],
    c1: ["bj@b:1"],
    c2: ["bj@b:2"],
    c3: [],
    c4: [],
  });
  // No queue in a configured room: nothing for anyone.
  assert.deepEqual(assignment(byRoom, queues("sh@b", 4), C3), { c0: [], c1: [], c2: [] });
});

/** Rooms from names: broker "hz-broker-a" and consumer "hz-c1" are in room "hz". */
const ROOM_BY_PREFIX: MachineRoomResolver = {
  brokerDeployIn: (mq) => mq.brokerName.split("-")[0],
  consumerDeployIn: (clientId) => clientId.split("-")[0],
};

Deno.test("AllocateMachineRoomNearby.allocate() keeps queues in their room and shares rooms with no consumer", () => {
  const nearby = new AllocateMachineRoomNearby(new AllocateMessageQueueAveragely(), ROOM_BY_PREFIX);
  const mqAll = [
    ...queues("sh-broker", 4),
    ...queues("hz-broker", 4),
    ...queues("cd-broker", 2),
    ...queues("bj-broker", 3),
  ];
  const cidAll = ["sh-c1", "hz-c2", "hz-c1"];
  // My room first (the inner strategy over my room's consumers), then each room without
  // consumers in room order (bj, cd), each split by the inner strategy over all of cidAll.
  const shares = assignment(nearby, mqAll, cidAll);
  assert.deepEqual(shares, {
    "sh-c1": ["sh-broker:0", "sh-broker:1", "sh-broker:2", "sh-broker:3", "bj-broker:2"],
    "hz-c2": ["hz-broker:2", "hz-broker:3", "bj-broker:1", "cd-broker:1"],
    "hz-c1": ["hz-broker:0", "hz-broker:1", "bj-broker:0", "cd-broker:0"],
  });
  assertPartition(shares, mqAll);

  // sh-c1 leaves: sh has no consumer now, so its queues are shared too (bj, cd, sh).
  const afterLeave = assignment(nearby, mqAll, ["hz-c1", "hz-c2"]);
  assert.deepEqual(afterLeave, {
    "hz-c1": [
      "hz-broker:0",
      "hz-broker:1",
      "bj-broker:0",
      "bj-broker:1",
      "cd-broker:0",
      "sh-broker:0",
      "sh-broker:1",
    ],
    "hz-c2": [
      "hz-broker:2",
      "hz-broker:3",
      "bj-broker:2",
      "cd-broker:1",
      "sh-broker:2",
      "sh-broker:3",
    ],
  });
  assertPartition(afterLeave, mqAll);

  // gz-c1 joins from a room without brokers: it takes only from the shared rooms.
  const afterJoin = assignment(nearby, mqAll, [...cidAll, "gz-c1"]);
  assert.deepEqual(afterJoin, {
    "sh-c1": ["sh-broker:0", "sh-broker:1", "sh-broker:2", "sh-broker:3"],
    "hz-c2": ["hz-broker:2", "hz-broker:3", "bj-broker:2"],
    "hz-c1": ["hz-broker:0", "hz-broker:1", "bj-broker:1", "cd-broker:1"],
    "gz-c1": ["bj-broker:0", "cd-broker:0"],
  });
  assertPartition(afterJoin, mqAll);
});

Deno.test("AllocateMachineRoomNearby.allocate() partitions the queues with any inner strategy", () => {
  const inner = [
    new AllocateMessageQueueAveragely(),
    new AllocateMessageQueueAveragelyByCircle(),
    new AllocateMessageQueueConsistentHash(),
  ];
  const mqAll = [...queues("hz-a", 5), ...queues("sh-b", 7), ...queues("bj-c", 3)];
  const groups = [["hz-1"], ["hz-1", "sh-1"], ["hz-1", "hz-2", "sh-1", "gz-1"], ["gz-1", "gz-2"]];
  for (const strategy of inner) {
    const nearby = new AllocateMachineRoomNearby(strategy, ROOM_BY_PREFIX);
    for (const cidAll of groups) assertPartition(assignment(nearby, mqAll, cidAll), mqAll);
  }
});

Deno.test("AllocateMachineRoomNearby.allocate() throws when the resolver names no room", () => {
  const avg = new AllocateMessageQueueAveragely();
  const noBrokerRoom = new AllocateMachineRoomNearby(avg, {
    brokerDeployIn: (mq) => (mq.queueId === 2 ? "" : "hz"),
    consumerDeployIn: () => "hz",
  });
  const noConsumerRoom = new AllocateMachineRoomNearby(avg, {
    brokerDeployIn: () => "hz",
    consumerDeployIn: (cid) => (cid === "c2" ? undefined : "hz"),
  });
  for (const strategy of [noBrokerRoom, noConsumerRoom]) {
    assert.throws(
      () => strategy.allocate({ consumerGroup: GROUP, currentCid: "c0", mqAll: B8, cidAll: C3 }),
      (error) => error instanceof AllocateArgumentError && error.code === "MACHINE_ROOM_EMPTY",
    );
  }
});

/** First 4 bytes of MD5 via the hex digest: another path to RocketMQ's MD5Hash. */
function md5Position(key: string): number {
  return parseInt(createHash("md5").update(key).digest("hex").slice(0, 8), 16);
}

/** A plain reimplementation of RocketMQ's ring: a sorted list, a linear scan. */
function expectedConsistentHashOwner(cidAll: string[], vnodes: number, mq: MessageQueue): string {
  const ring: Array<{ position: number; cid: string }> = [];
  for (const cid of [...cidAll].sort()) {
    for (let k = 0; k < vnodes; k++) {
      const position = md5Position(`${cid}-${k}`);
      const taken = ring.findIndex((node) => node.position === position);
      if (taken >= 0) ring[taken] = { position, cid };
      else ring.push({ position, cid });
    }
  }
  ring.sort((a, b) => a.position - b.position);
  const hash = md5Position(
    `MessageQueue [topic=${mq.topic}, brokerName=${mq.brokerName}, queueId=${mq.queueId}]`,
  );
  return (ring.find((node) => node.position >= hash) ?? ring[0]).cid;
}

Deno.test("AllocateMessageQueueConsistentHash.allocate() matches a hand-computed MD5 ring", () => {
  // Positions from `printf '%s' KEY | md5sum | cut -c1-8`:
  //   c2-1 0x0bd54963 = 198527331     c2-0 0x31831c51 = 830676049
  //   c1-1 0x70f83886 = 1895315590    c1-0 0xe7a7eb0b = 3886541579
  // Queues of topic T on broker b: q3 434191955 -> c2-0; q0 562732085 -> c2-0;
  // q2 1979679239 -> c1-0; q1 3803073317 -> c1-0; q4 4287528942 wraps to c2-1.
  const twoNodes = new AllocateMessageQueueConsistentHash({ virtualNodeCnt: 2 });
  assert.deepEqual(assignment(twoNodes, queues("b", 5), ["c2", "c1"]), {
    c2: ["b:0", "b:3", "b:4"],
    c1: ["b:1", "b:2"],
  });
});

Deno.test("AllocateMessageQueueConsistentHash.allocate() with 10 virtual nodes: exact shares as members change", () => {
  const hash = new AllocateMessageQueueConsistentHash();
  const mqAll = [...queues("broker-b", 4, "TopicTest"), ...queues("broker-a", 4, "TopicTest")];
  const [c1, c2, c3, c4] = [
    "192.168.0.1@1001",
    "192.168.0.2@1002",
    "192.168.0.3@1003",
    "192.168.0.4@1004",
  ];
  // Printed once from this code and checked against the reimplementation below. c2 owns
  // no queue: with 8 keys and 30 virtual nodes, an empty share is normal.
  const three = assignment(hash, mqAll, [c1, c2, c3]);
  assert.deepEqual(three, {
    [c1]: ["broker-a:2", "broker-b:0", "broker-b:1"],
    [c2]: [],
    [c3]: ["broker-a:0", "broker-a:1", "broker-a:3", "broker-b:2", "broker-b:3"],
  });
  // c2 leaves: nobody's share changes, as c2 had none.
  assert.deepEqual(assignment(hash, mqAll, [c1, c3]), { [c1]: three[c1], [c3]: three[c3] });
  // c4 joins: it takes broker-b:0 and broker-b:1 from c1; no other queue moves.
  assert.deepEqual(assignment(hash, mqAll, [c1, c2, c3, c4]), {
    [c1]: ["broker-a:2"],
    [c2]: [],
    [c3]: three[c3],
    [c4]: ["broker-b:0", "broker-b:1"],
  });
});

Deno.test("AllocateMessageQueueConsistentHash.allocate() agrees with a plain reimplementation of the ring", () => {
  for (const vnodes of [1, 3, 10]) {
    const hash = new AllocateMessageQueueConsistentHash({ virtualNodeCnt: vnodes });
    for (let consumerCount = 1; consumerCount <= 6; consumerCount++) {
      const cidAll = Array.from({ length: consumerCount }, (_, i) => `172.16.${i}.7@${4000 + i}`);
      const mqAll = [...queues("broker-a", 9, "orders"), ...queues("broker-b", 5, "orders")];
      for (const cid of cidAll) {
        const expected = mqAll.filter((mq) =>
          expectedConsistentHashOwner(cidAll, vnodes, mq) === cid
        );
        assert.deepEqual(allocateLabels(hash, cid, mqAll, cidAll), expected.map(label));
      }
    }
  }
});

Deno.test("AllocateMessageQueueConsistentHash.allocate() moves queues only from a leaver and only to a joiner", () => {
  const hash = new AllocateMessageQueueConsistentHash();
  const mqAll = [...queues("broker-a", 16), ...queues("broker-b", 16)];
  const cidAll = Array.from({ length: 5 }, (_, i) => `10.1.0.${i}@9876`);
  const owners = (cids: string[]) =>
    new Map(cids.flatMap((cid) => allocateLabels(hash, cid, mqAll, cids).map((q) => [q, cid])));
  const before = owners(cidAll);
  const leaver = cidAll[2];
  const afterLeave = owners(cidAll.filter((cid) => cid !== leaver));
  const joiner = "10.1.0.99@9876";
  const afterJoin = owners([...cidAll, joiner]);
  for (const [queue, owner] of before) {
    if (owner !== leaver) assert.equal(afterLeave.get(queue), owner, queue);
    const ownerAfterJoin = afterJoin.get(queue);
    assert.ok(ownerAfterJoin === owner || ownerAfterJoin === joiner, queue);
  }
  assert.equal(before.size, mqAll.length);
});

Deno.test("AllocateMessageQueueConsistentHash hashes `${cid}-${k}` for k < virtualNodeCnt (default 10) and MessageQueue.toString()", () => {
  const hashed: string[] = [];
  const recording = (key: string) => {
    hashed.push(key);
    return md5Hash(key);
  };
  const mq = { topic: "T", brokerName: "b", queueId: 3 };
  new AllocateMessageQueueConsistentHash({ hashFunction: recording })
    .allocate({ consumerGroup: GROUP, currentCid: "c1", mqAll: [mq], cidAll: ["c2", "c1"] });
  assert.deepEqual(hashed, [
    ...Array.from({ length: 10 }, (_, k) => `c1-${k}`),
    ...Array.from({ length: 10 }, (_, k) => `c2-${k}`),
    "MessageQueue [topic=T, brokerName=b, queueId=3]",
  ]);
  assert.equal(messageQueueToString(mq), "MessageQueue [topic=T, brokerName=b, queueId=3]");
});

Deno.test("AllocateMessageQueueConsistentHash with 0 virtual nodes gives nothing; a negative or fractional count throws", () => {
  const none = new AllocateMessageQueueConsistentHash({ virtualNodeCnt: 0 });
  assert.deepEqual(assignment(none, B8, C3), { c0: [], c1: [], c2: [] });
  for (const virtualNodeCnt of [-1, 1.5, Number.NaN]) {
    assert.throws(
      () => new AllocateMessageQueueConsistentHash({ virtualNodeCnt }),
      (error) =>
        error instanceof AllocateArgumentError && error.code === "VIRTUAL_NODE_COUNT_INVALID",
    );
  }
});
