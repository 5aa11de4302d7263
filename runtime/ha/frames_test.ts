import assert from "node:assert/strict";
import fc from "fast-check";
import {
  decodeFrame,
  encodeFrame,
  type Frame,
  FrameDecoder,
  FrameError,
  type FrameErrorCode,
  HA_EPOCH_ENTRIES_MAX,
  HA_PROTOCOL_VERSION,
} from "./frames.ts";

const offset = fc.maxSafeNat();
const epoch = fc.integer({ min: 0, max: 0x7fffffff });

const frameArb: fc.Arbitrary<Frame> = fc.oneof(
  fc.record({
    type: fc.constant("HANDSHAKE" as const),
    epoch,
    version: fc.constant(HA_PROTOCOL_VERSION),
    syncFromLastFile: fc.boolean(),
    brokerId: fc.integer({ min: 0, max: 0xffffffff }),
    minOffset: offset,
    maxOffset: offset,
    entries: fc.array(fc.record({ epoch, startOffset: offset }), { maxLength: 8 }),
  }),
  fc.record({
    type: fc.constant("HANDSHAKE_REPLY" as const),
    epoch,
    status: fc.constantFrom("OK" as const, "DIVERGED" as const, "BEHIND" as const),
    masterMinOffset: offset,
    masterMaxOffset: offset,
    truncateOffset: offset,
    startOffset: offset,
  }),
  fc.record({
    type: fc.constant("TRANSFER" as const),
    epoch,
    offset,
    dataEpoch: epoch,
    dataEpochStart: offset,
    confirmOffset: offset,
    body: fc.uint8Array({ maxLength: 3000 }),
  }),
  fc.record({ type: fc.constant("ACK" as const), epoch, maxOffset: offset }),
  fc.record({
    type: fc.constant("HEARTBEAT" as const),
    epoch,
    masterMaxOffset: offset,
    confirmOffset: offset,
  }),
);

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

Deno.test("FrameDecoder.push() returns every encoded frame, in order, however the stream is cut", () => {
  fc.assert(
    fc.property(
      fc.array(frameArb, { minLength: 1, maxLength: 12 }),
      fc.array(fc.integer({ min: 0, max: 1 << 20 }), { maxLength: 30 }),
      (frames, cutsRaw) => {
        const stream = concat(frames.map(encodeFrame));
        const cuts = [...new Set(cutsRaw.map((c) => c % (stream.length + 1)))].sort((a, b) =>
          a - b
        );
        const decoder = new FrameDecoder();
        const got: Frame[] = [];
        let from = 0;
        for (const [i, at] of [...cuts, stream.length].entries()) {
          // As a socket hands them over: Buffers that are views into a larger pool, at an
          // offset (alternating with plain arrays).
          const piece = stream.slice(from, at);
          const pool = new Uint8Array(piece.length + 13);
          pool.set(piece, 13);
          got.push(
            ...decoder.push(i % 2 ? piece : Buffer.from(pool.buffer, 13, piece.length)),
          );
          from = at;
        }
        // fc.record objects have no prototype; bodies cut from Buffers are Buffers.
        const plain = got.map((f) =>
          f.type === "TRANSFER" ? { ...f, body: new Uint8Array(f.body) } : f
        );
        assert.deepEqual(plain, structuredClone(frames));
        assert.equal(decoder.bufferedBytes, 0);
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("FrameDecoder.push() holds a partial frame until its last byte arrives", () => {
  const bytes = encodeFrame({ type: "ACK", epoch: 3, maxOffset: 4096 });
  const decoder = new FrameDecoder();
  for (let i = 0; i < bytes.length - 1; i++) {
    assert.deepEqual(decoder.push(bytes.subarray(i, i + 1)), []);
  }
  assert.deepEqual(decoder.push(bytes.subarray(bytes.length - 1)), [
    { type: "ACK", epoch: 3, maxOffset: 4096 },
  ]);
});

/** A frame with the given header and payload bytes, length field computed unless given. */
function raw(type: number, payload: number[], length?: number): Uint8Array {
  const bytes = new Uint8Array(9 + payload.length);
  const view = new DataView(bytes.buffer);
  view.setUint32(0, length ?? bytes.length - 4);
  view.setUint8(4, type);
  view.setUint32(5, 1);
  bytes.set(payload, 9);
  return bytes;
}

function withBytes(frame: Frame, patch: (view: DataView) => void): Uint8Array {
  const bytes = encodeFrame(frame);
  patch(new DataView(bytes.buffer));
  return bytes;
}

const ack: Frame = { type: "ACK", epoch: 1, maxOffset: 5 };
const transfer: Frame = {
  type: "TRANSFER",
  epoch: 1,
  offset: 0,
  dataEpoch: 1,
  dataEpochStart: 0,
  confirmOffset: 0,
  body: new Uint8Array(10),
};
const handshake: Frame = {
  type: "HANDSHAKE",
  epoch: 1,
  version: 1,
  syncFromLastFile: false,
  brokerId: 7,
  minOffset: 0,
  maxOffset: 0,
  entries: [{ epoch: 1, startOffset: 0 }],
};
const reply: Frame = {
  type: "HANDSHAKE_REPLY",
  epoch: 1,
  status: "OK",
  masterMinOffset: 0,
  masterMaxOffset: 0,
  truncateOffset: 0,
  startOffset: 0,
};

Deno.test("FrameDecoder.push() refuses malformed frames with a typed error, then stays refusing", () => {
  const table: [string, Uint8Array, FrameErrorCode][] = [
    ["length beyond frameBytesMax", raw(4, [], 1 << 30), "FRAME_TOO_LARGE"],
    [
      "HTTP spoken to the port",
      new TextEncoder().encode("GET / HTTP/1.1\r\n\r\n"),
      "FRAME_TOO_LARGE",
    ],
    ["length shorter than a header", raw(4, [], 3), "FRAME_LENGTH_ILLEGAL"],
    ["unknown type 0", raw(0, [0, 0, 0, 0, 0, 0, 0, 0]), "FRAME_TYPE_UNKNOWN"],
    ["unknown type 9", raw(9, []), "FRAME_TYPE_UNKNOWN"],
    ["ACK with 7 bytes", raw(4, [0, 0, 0, 0, 0, 0, 0]), "FRAME_LENGTH_ILLEGAL"],
    ["ACK with 9 bytes", raw(4, [0, 0, 0, 0, 0, 0, 0, 0, 0]), "FRAME_LENGTH_ILLEGAL"],
    ["HEARTBEAT with 8 bytes", raw(5, [0, 0, 0, 0, 0, 0, 0, 0]), "FRAME_LENGTH_ILLEGAL"],
    ["TRANSFER shorter than its header", raw(3, new Array(20).fill(0)), "FRAME_LENGTH_ILLEGAL"],
    [
      "TRANSFER bodySize past the frame",
      withBytes(transfer, (v) => v.setUint32(9 + 28, 11)),
      "FRAME_LENGTH_ILLEGAL",
    ],
    [
      "TRANSFER bodySize short of the frame",
      withBytes(transfer, (v) => v.setUint32(9 + 28, 9)),
      "FRAME_LENGTH_ILLEGAL",
    ],
    [
      "TRANSFER body damaged after its CRC",
      withBytes(transfer, (v) => v.setUint8(9 + 36 + 3, 1)),
      "FRAME_CRC_MISMATCH",
    ],
    [
      "TRANSFER CRC damaged",
      withBytes(transfer, (v) => v.setUint32(9 + 32, v.getUint32(9 + 32) ^ 4)),
      "FRAME_CRC_MISMATCH",
    ],
    [
      "epoch above 2^31-1",
      withBytes(ack, (v) => v.setUint32(5, 0x80000000)),
      "FRAME_FIELD_ILLEGAL",
    ],
    [
      "offset beyond 2^53",
      withBytes(ack, (v) => v.setUint32(9, 0x00200000)),
      "FRAME_FIELD_ILLEGAL",
    ],
    [
      "HANDSHAKE of another protocol version",
      withBytes(handshake, (v) => v.setUint16(9, 2)),
      "FRAME_FIELD_ILLEGAL",
    ],
    [
      "HANDSHAKE with unknown flags",
      withBytes(handshake, (v) => v.setUint8(11, 6)),
      "FRAME_FIELD_ILLEGAL",
    ],
    [
      "HANDSHAKE counting more entries than it holds",
      withBytes(handshake, (v) => v.setUint32(9 + 23, 2)),
      "FRAME_LENGTH_ILLEGAL",
    ],
    [
      "HANDSHAKE counting more entries than allowed",
      withBytes(handshake, (v) => v.setUint32(9 + 23, HA_EPOCH_ENTRIES_MAX + 1)),
      "FRAME_FIELD_ILLEGAL",
    ],
    ["HANDSHAKE_REPLY status 7", withBytes(reply, (v) => v.setUint8(9, 7)), "FRAME_FIELD_ILLEGAL"],
  ];
  for (const [name, bytes, code] of table) {
    const decoder = new FrameDecoder(1 << 20);
    const good = encodeFrame(ack);
    const isCode = (e: unknown) => e instanceof FrameError && e.code === code;
    // A good frame before the bad one in the same chunk is not what fails.
    assert.throws(() => decoder.push(concat([good, bytes])), isCode, name);
    assert.throws(() => decoder.push(good), isCode, `${name}: later pushes`);
  }
});

Deno.test("FrameDecoder refuses an oversize frame on its length alone", () => {
  const decoder = new FrameDecoder(1024);
  const header = raw(3, [], 2000).subarray(0, 4);
  assert.throws(
    () => decoder.push(header),
    (e: unknown) => e instanceof FrameError && e.code === "FRAME_TOO_LARGE",
  );
});

Deno.test("encodeFrame() refuses values its layout cannot carry", () => {
  for (
    const frame of [
      { ...ack, epoch: -1 },
      { ...ack, epoch: 2 ** 31 },
      { ...ack, maxOffset: -5 },
      { ...ack, maxOffset: 2 ** 53 },
      { ...ack, maxOffset: 1.5 },
    ] as Frame[]
  ) {
    assert.throws(
      () => encodeFrame(frame),
      (e: unknown) => e instanceof FrameError && e.code === "FRAME_FIELD_ILLEGAL",
    );
  }
  assert.deepEqual(decodeFrame(encodeFrame(handshake)), handshake);
});
