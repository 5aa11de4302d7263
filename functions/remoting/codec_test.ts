import assert from "node:assert/strict";
const assertEquals = (a: unknown, b: unknown) => assert.deepEqual(a, b);
const assertThrows = (f: () => unknown, E: new (...a: never[]) => Error) => assert.throws(f, E);
import fc from "fast-check";
import {
  decodeCommand,
  encodeCommand,
  FLAG_ONEWAY,
  FLAG_RESPONSE,
  FrameDecoder,
  FrameError,
  isOneway,
  isResponse,
  LANGUAGES,
  type RemotingCommand,
  responseTo,
  SERIALIZE_JSON,
  SERIALIZE_ROCKETMQ,
} from "./codec.ts";

const command = fc.record({
  code: fc.integer({ min: -32768, max: 32767 }),
  language: fc.constantFrom(...LANGUAGES),
  version: fc.integer({ min: 0, max: 32767 }),
  opaque: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
  flag: fc.integer({ min: 0, max: 3 }),
  remark: fc.option(fc.string({ unit: "grapheme" }), { nil: undefined }),
  extFields: fc.dictionary(
    fc.string({ minLength: 1, maxLength: 20 }).filter((k) => k !== "__proto__"),
    fc.string({ unit: "grapheme", maxLength: 40 }),
    { maxKeys: 8 },
  ),
  body: fc.option(fc.uint8Array({ minLength: 1, maxLength: 300 }), { nil: undefined }),
  serializeType: fc.constantFrom(SERIALIZE_JSON, SERIALIZE_ROCKETMQ),
}) as fc.Arbitrary<RemotingCommand>;

function roundTrip(cmd: RemotingCommand): RemotingCommand {
  const frames = new FrameDecoder().push(encodeCommand(cmd));
  assertEquals(frames.length, 1);
  return decodeCommand(frames[0]);
}

function normal(cmd: RemotingCommand) {
  const out: Record<string, unknown> = { ...cmd, extFields: { ...cmd.extFields } };
  if (cmd.body === undefined) delete out.body;
  else out.body = [...cmd.body];
  if (cmd.remark === undefined || (cmd.remark === "" && cmd.serializeType === 1)) {
    delete out.remark;
  }
  return out;
}

Deno.test("encodeCommand()/decodeCommand() round-trip JSON and ROCKETMQ headers", () => {
  fc.assert(
    fc.property(command, (cmd) => {
      assertEquals(normal(roundTrip(cmd)), normal(cmd));
    }),
    { numRuns: 300 },
  );
});

Deno.test("FrameDecoder.push() yields the same frames however the stream is split", () => {
  fc.assert(
    fc.property(
      fc.array(command, { minLength: 1, maxLength: 6 }),
      fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 20 }),
      (cmds, cuts) => {
        const stream = concat(cmds.map(encodeCommand));
        const decoder = new FrameDecoder();
        const got: RemotingCommand[] = [];
        let at = 0, i = 0;
        while (at < stream.length) {
          const n = cuts[i++ % cuts.length];
          for (const f of decoder.push(stream.subarray(at, at + n))) got.push(decodeCommand(f));
          at += n;
        }
        assertEquals(got.map(normal), cmds.map(normal));
        assertEquals(decoder.pendingBytes, 0);
      },
    ),
    { numRuns: 200 },
  );
});

Deno.test("decodeCommand() throws FrameError, never anything else, on random payloads", () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 200 }), fc.constantFrom(0, 1, 2, 7), (bytes, type) => {
      const payload = new Uint8Array(4 + bytes.length);
      new DataView(payload.buffer).setInt32(0, (type << 24) | Math.min(bytes.length, 255));
      payload.set(bytes, 4);
      try {
        decodeCommand(payload);
      } catch (err) {
        assert(err instanceof FrameError, String(err));
      }
    }),
    { numRuns: 500 },
  );
});

Deno.test("FrameDecoder.push() refuses lengths under 4 and over the maximum", () => {
  const frame = (length: number) => {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setInt32(0, length);
    return b;
  };
  assertThrows(() => new FrameDecoder(1024).push(frame(2)), FrameError);
  assertThrows(() => new FrameDecoder(1024).push(frame(-1)), FrameError);
  assertThrows(() => new FrameDecoder(1024).push(frame(1025)), FrameError);
  assertEquals(new FrameDecoder(1024).push(frame(1024)), []); // waits for the rest
});

Deno.test("decodeCommand() reads ali-ons' JSON header (numbers in extFields, language name)", () => {
  const header = new TextEncoder().encode(JSON.stringify({
    code: 11,
    language: "JAVA",
    opaque: 7,
    flag: 0,
    version: 121,
    extFields: { queueId: 3, topic: "T", unitMode: false, skip: null },
  }));
  const payload = new Uint8Array(4 + header.length);
  new DataView(payload.buffer).setInt32(0, header.length);
  payload.set(header, 4);
  const cmd = decodeCommand(payload);
  assertEquals(cmd.extFields, { queueId: "3", topic: "T", unitMode: "false" });
  assertEquals([cmd.code, cmd.opaque, cmd.version, cmd.language], [11, 7, 121, "JAVA"]);
  assert(!isResponse(cmd) && !isOneway(cmd));
});

Deno.test("responseTo() echoes opaque and serialize type with the response flag", () => {
  const req: RemotingCommand = {
    code: 105,
    language: "JAVA",
    version: 1,
    opaque: 42,
    flag: FLAG_ONEWAY,
    extFields: {},
    serializeType: SERIALIZE_ROCKETMQ,
  };
  const res = responseTo(req, 17, "no topic");
  assertEquals([res.opaque, res.flag, res.serializeType], [42, FLAG_RESPONSE, SERIALIZE_ROCKETMQ]);
  assertEquals(roundTrip(res).remark, "no topic");
});

Deno.test("decodeCommand() refuses bad JSON, bad header length and unknown serialize type", () => {
  const raw = (typeAndLen: number, rest: string) => {
    const r = new TextEncoder().encode(rest);
    const p = new Uint8Array(4 + r.length);
    new DataView(p.buffer).setInt32(0, typeAndLen);
    p.set(r, 4);
    return p;
  };
  assertThrows(() => decodeCommand(raw(5, "{bad}")), FrameError);
  assertThrows(() => decodeCommand(raw(500, "{}")), FrameError);
  assertThrows(() => decodeCommand(raw((3 << 24) | 2, "{}")), FrameError);
  assertThrows(() => decodeCommand(raw(2, "[]")), FrameError);
  assertThrows(() => decodeCommand(raw(11, '{"code":"x"}')), FrameError);
});

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
