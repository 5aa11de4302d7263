import { PROPERTY_KEYS, PROPERTY_TAGS } from "./message_const.ts";
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  bodyCrc32,
  javaStringHashCode,
  MAGIC_V1,
  type MessageInput,
  prepareRecord,
  stampRecord,
} from "./record.ts";
import { decodeProperties, parseRecord } from "./record_decode.ts";
import { StoreError } from "../errors.ts";

const v4 = (a: number, b: number, c: number, d: number, port: number) => ({
  ip: new Uint8Array([a, b, c, d]),
  port,
});
const MAX = 4 * 1024 * 1024;

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

Deno.test("prepareRecord() encodes RocketMQ's v1 layout byte for byte", () => {
  const input: MessageInput = {
    topic: "T",
    queueId: 3,
    flag: 7,
    body: new TextEncoder().encode("hi"),
    properties: new Map([[PROPERTY_TAGS, "A"]]),
    bornTimestamp: 0x0102030405,
    bornHost: v4(127, 0, 0, 1, 10911),
    storeHost: v4(10, 0, 0, 2, 10912),
    reconsumeTimes: 1,
    preparedTransactionOffset: 9,
  };
  const prepared = prepareRecord(input, MAX);
  stampRecord(new DataView(prepared.bytes.buffer), 0, 5, 1024, 0x0A0B0C0D0E);
  // 91 + body 2 + topic 1 + props "TAGS\u0001A\u0002" 7 = 101 bytes, computed by hand:
  const expected = [
    "00000065", // TOTALSIZE 101
    "daa320a7", // MAGICCODE v1
    (bodyCrc32(input.body) >>> 0).toString(16).padStart(8, "0"), // BODYCRC
    "00000003", // QUEUEID
    "00000007", // FLAG
    "0000000000000005", // QUEUEOFFSET
    "0000000000000400", // PHYSICALOFFSET 1024
    "00000000", // SYSFLAG (IPv4 both)
    "0000000102030405", // BORNTIMESTAMP
    "7f000001" + "00002a9f", // BORNHOST 127.0.0.1:10911
    "0000000a0b0c0d0e", // STORETIMESTAMP
    "0a000002" + "00002aa0", // STOREHOST 10.0.0.2:10912
    "00000001", // RECONSUMETIMES
    "0000000000000009", // PREPARED TRANSACTION OFFSET
    "00000002" + "6869", // body "hi"
    "01" + "54", // topic "T"
    "0007" + "544147530141" + "02", // props
  ].join("");
  assert.equal(hex(prepared.bytes), expected);
  assert.equal(prepared.bytes.length, 101);
});

Deno.test("bodyCrc32() matches RocketMQ's UtilAll.crc32 (masked to 31 bits)", () => {
  // crc32("123456789") = 0xCBF43926; masked with 0x7FFFFFFF = 0x4BF43926.
  assert.equal(bodyCrc32(new TextEncoder().encode("123456789")), 0x4BF43926);
});

// Expected values printed by OpenJDK 17 String.hashCode().
Deno.test("javaStringHashCode() follows Java String.hashCode, int32 overflow and UTF-16 units", () => {
  assert.equal(javaStringHashCode(""), 0);
  assert.equal(javaStringHashCode("TagA"), 2598919);
  assert.equal(javaStringHashCode("hello world"), 1794106052);
  assert.equal(javaStringHashCode("a longer string that overflows"), -1789667313);
  assert.equal(javaStringHashCode("😀"), 1772899);
});

Deno.test("prepareRecord() with IPv6 hosts sets SYSFLAG bits and shifts later fields", () => {
  const ip6 = new Uint8Array(16).fill(0).map((_, i) => i);
  const prepared = prepareRecord({
    topic: "T6",
    queueId: 0,
    body: new Uint8Array([1, 2, 3]),
    bornTimestamp: 1,
    bornHost: { ip: ip6, port: 1 },
    storeHost: { ip: ip6, port: 2 },
  }, MAX);
  assert.equal(prepared.bytes.length, 91 + 24 + 3 + 2);
  stampRecord(new DataView(prepared.bytes.buffer), 0, 0, 0, 77);
  const parsed = parseRecord(prepared.bytes, 0, { checkCrc: true });
  assert.equal(parsed.kind, "record");
  if (parsed.kind !== "record") return;
  assert.equal(parsed.record.sysFlag, 0x30);
  assert.equal(parsed.record.storeTimestamp, 77);
  assert.deepEqual(parsed.record.bornHost.ip, ip6);
  assert.equal(parsed.record.storeHost.port, 2);
});

Deno.test("prepareRecord() uses V2 with a 2-byte topic length for long retry topics", () => {
  const topic = "%RETRY%" + "g".repeat(200);
  const prepared = prepareRecord({
    topic,
    queueId: 0,
    body: new Uint8Array(0),
    bornTimestamp: 1,
    bornHost: v4(1, 2, 3, 4, 5),
    storeHost: v4(1, 2, 3, 4, 5),
  }, MAX);
  const parsed = parseRecord(prepared.bytes, 0, { checkCrc: true });
  assert.equal(parsed.kind, "record");
  if (parsed.kind === "record") assert.equal(parsed.record.topic, topic);
  assert.notEqual(new DataView(prepared.bytes.buffer).getInt32(4), MAGIC_V1);
});

Deno.test("prepareRecord() refuses bad input with a typed error", async (t) => {
  const base: MessageInput = {
    topic: "ok",
    queueId: 0,
    body: new Uint8Array(1),
    bornTimestamp: 1,
    bornHost: v4(1, 1, 1, 1, 1),
    storeHost: v4(1, 1, 1, 1, 1),
  };
  const cases: [string, Partial<MessageInput>, string][] = [
    ["oversize body", { body: new Uint8Array(MAX + 1) }, "MESSAGE_TOO_LARGE"],
    ["empty topic", { topic: "" }, "TOPIC_ILLEGAL"],
    ["over-long topic", { topic: "t".repeat(128) }, "TOPIC_ILLEGAL"],
    ["ill-formed topic", { topic: "a/b" }, "TOPIC_ILLEGAL"],
    ["unicode topic", { topic: "tópico" }, "TOPIC_ILLEGAL"],
    ["separator in property name", { properties: new Map([["a\u0001", "v"]]) }, "PROPERTY_ILLEGAL"],
    [
      "separator in property value",
      { properties: new Map([["a", "v\u0002"]]) },
      "PROPERTY_ILLEGAL",
    ],
    ["empty property name", { properties: new Map([["", "v"]]) }, "PROPERTY_ILLEGAL"],
    [
      "too many property bytes",
      { properties: new Map([["a", "v".repeat(40_000)]]) },
      "PROPERTIES_SIZE_EXCEEDED",
    ],
    ["negative queue id", { queueId: -1 }, "QUEUE_ID_ILLEGAL"],
  ];
  for (const [name, patch, code] of cases) {
    await t.step(name, () => {
      assert.throws(() => prepareRecord({ ...base, ...patch }, MAX), (err: unknown) => {
        assert.ok(err instanceof StoreError);
        assert.equal(err.code, code);
        return true;
      });
    });
  }
});

Deno.test("parseRecord() round-trips any body, topic and properties (property test)", () => {
  const topicArb = fc.stringMatching(/^[%|a-zA-Z0-9_-]{1,127}$/);
  const propName = fc.string({ minLength: 1, maxLength: 20 }).filter((s) =>
    !s.includes("\u0001") && !s.includes("\u0002")
  );
  const propValue = fc.string({ maxLength: 50 }).filter((s) =>
    !s.includes("\u0001") && !s.includes("\u0002")
  );
  fc.assert(
    fc.property(
      topicArb,
      fc.uint8Array({ maxLength: 2048 }),
      fc.dictionary(propName, propValue, { maxKeys: 8 }),
      fc.nat({ max: 2 ** 40 }),
      fc.nat({ max: 1024 }),
      (topic, body, props, queueOffset, queueId) => {
        const properties = new Map(Object.entries(props));
        const prepared = prepareRecord({
          topic,
          queueId,
          body,
          properties,
          bornTimestamp: 123,
          bornHost: v4(1, 2, 3, 4, 5),
          storeHost: v4(5, 6, 7, 8, 9),
        }, MAX);
        stampRecord(new DataView(prepared.bytes.buffer), 0, queueOffset, 4096, 456);
        const parsed = parseRecord(prepared.bytes, 0, {
          checkCrc: true,
          expectedPhysicalOffset: 4096,
        });
        assert.equal(parsed.kind, "record");
        if (parsed.kind !== "record") return;
        assert.equal(parsed.record.topic, topic);
        assert.deepEqual(parsed.record.body, body);
        assert.equal(parsed.record.queueOffset, queueOffset);
        // Pairs shorter than 3 characters are skipped on read, as RocketMQ does.
        const kept = new Map([...properties].filter(([k, v]) => (k + "\u0001" + v).length >= 3));
        assert.deepEqual(parsed.record.properties, kept);
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("the properties section is the UTF-8 of NAME\\u0001VALUE\\u0002 pairs, ASCII or not, up to 32767 bytes", () => {
  const section = (properties: Map<string, string>) => {
    const r = prepareRecord({
      topic: "T",
      queueId: 0,
      body: new Uint8Array(0),
      properties,
      bornTimestamp: 1,
      bornHost: v4(1, 1, 1, 1, 1),
      storeHost: v4(1, 1, 1, 1, 1),
    }, MAX);
    const bytes = r.bytes;
    const length = new DataView(bytes.buffer).getInt16(bytes.length - r.propsBytes - 2);
    assert.equal(length, r.propsBytes);
    return bytes.subarray(bytes.length - r.propsBytes);
  };
  const text = (m: Map<string, string>) =>
    new TextEncoder().encode([...m].map(([k, v]) => k + "\u0001" + v + "\u0002").join(""));
  for (
    const m of [
      new Map([["UNIQ_KEY", "0A0B0C0D0E0F10111213141516171819"], ["TAGS", "a"]]),
      new Map([["k", "\u0000\u007f"], ["e", "é"]]), // ASCII edges, then a two-byte character
      new Map([["é", "x"], ["k", "😀 ü"]]), // non-ASCII name, a surrogate pair
      new Map([["k", ""]]),
    ]
  ) assert.deepEqual(section(m), text(m));
  // The limit counts bytes: 32767 fits, one more does not, and "é" counts two.
  assert.equal(section(new Map([["k", "v".repeat(32767 - 3)]])).length, 32767);
  for (const value of ["v".repeat(32767 - 2), "é".repeat(16383)]) {
    assert.throws(
      () => section(new Map([["k", value]])),
      (err: unknown) => err instanceof StoreError && err.code === "PROPERTIES_SIZE_EXCEEDED",
    );
  }
});

Deno.test("parseRecord() reports a flipped body byte, a torn record and a wrong offset", () => {
  const prepared = prepareRecord({
    topic: "T",
    queueId: 0,
    body: new Uint8Array([1, 2, 3, 4]),
    bornTimestamp: 1,
    bornHost: v4(1, 1, 1, 1, 1),
    storeHost: v4(1, 1, 1, 1, 1),
  }, MAX);
  const flipped = prepared.bytes.slice();
  flipped[89] ^= 0xff;
  assert.deepEqual(parseRecord(flipped, 0, { checkCrc: true }), {
    kind: "corrupt",
    reason: "body CRC mismatch",
  });
  assert.equal(parseRecord(prepared.bytes.subarray(0, 50), 0, { checkCrc: true }).kind, "corrupt");
  assert.equal(
    parseRecord(prepared.bytes, 0, { checkCrc: true, expectedPhysicalOffset: 8 }).kind,
    "corrupt",
  );
  assert.equal(parseRecord(new Uint8Array(16), 0, { checkCrc: true }).kind, "end");
});

Deno.test("decodeProperties() reads pairs as MessageDecoder.string2messageProperties does", () => {
  const read = (text: string) => [...decodeProperties(new TextEncoder().encode(text))];
  assert.deepEqual(read(""), []);
  assert.deepEqual(read("KEYS\u0001a b\u0002TAGS\u0001T\u0002"), [[PROPERTY_KEYS, "a b"], [
    PROPERTY_TAGS,
    "T",
  ]]);
  // No trailing separator; a value may hold \u0001; an empty value is kept.
  assert.deepEqual(read("k\u0001v\u0001w\u0002kk\u0001"), [["k", "v\u0001w"], ["kk", ""]]);
  // Skipped: pairs under 3 characters, no name, no separator, empty pairs.
  assert.deepEqual(read("ab\u0002\u0001xyz\u0002name\u0002\u0002\u0002é\u0001ü"), [["é", "ü"]]);
});

Deno.test("parseRecord() decodes records of alternating topics in one buffer, and refuses a record whose fields run into the next", () => {
  const record = (topic: string, body: number[]) =>
    prepareRecord({
      topic,
      queueId: 0,
      body: new Uint8Array(body),
      properties: new Map([[PROPERTY_TAGS, topic + "-tag"]]),
      bornTimestamp: 1,
      bornHost: v4(1, 1, 1, 1, 1),
      storeHost: v4(1, 1, 1, 1, 1),
    }, MAX).bytes;
  const parts = [record("A", [1]), record("B", [2, 2]), record("A", [3]), record("AB", [4])];
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  const starts: number[] = [];
  for (const p of parts) {
    starts.push(at);
    all.set(p, at);
    at += p.length;
  }
  const topics = starts.map((s) => {
    const parsed = parseRecord(all, s, { checkCrc: true });
    assert.equal(parsed.kind, "record");
    return parsed.kind === "record"
      ? [parsed.record.topic, parsed.record.properties.get(PROPERTY_TAGS)]
      : [];
  });
  assert.deepEqual(topics, [["A", "A-tag"], ["B", "B-tag"], ["A", "A-tag"], ["AB", "AB-tag"]]);
  // A TOTALSIZE 3 bytes short: the properties end past it, in the next record's bytes.
  const short = all.slice();
  new DataView(short.buffer).setInt32(0, parts[0].length - 3);
  assert.deepEqual(parseRecord(short, 0, { checkCrc: true }), {
    kind: "corrupt",
    reason: "fields run past the record",
  });
});
