// Bad frames and the protocol's edges against one lean connection over a fake socket: each
// protocol error ends the connection with GOAWAY and the right code; PING is answered;
// unknown frames are ignored; replies wait for the client's flow-control window.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { H2Connection } from "./conn.ts";
import { ErrorCode, type Frame, frame, FrameReader, PREFACE, Type } from "./frames.ts";
import type { H2Stream } from "./stream.ts";

const LIMITS = {
  maxConcurrentStreams: 4,
  windowBytes: 1 << 20,
  maxFrameBytes: 16_384,
  headerListBytesMax: 8192,
  inboundBytesMax: 1 << 24,
  writeBufferBytes: 1 << 20,
  idleMs: 0,
  keepaliveMs: 0,
  keepaliveTimeoutMs: 0,
  closeGraceMs: 30,
  pingIntervalMinMs: 10_000,
  pingStrikesMax: 2,
};

/** A connection over a fake socket; `frames()` parses what the server wrote. */
function open(onStream: (s: H2Stream) => void = () => {}, destroyable = false) {
  const written: Buffer[] = [];
  let ended = false;
  let destroyed = false;
  const conn = new H2Connection(
    {
      write: (b) => written.push(Buffer.from(b)),
      end: () => ended = true,
      destroy: destroyable ? () => destroyed = true : undefined,
    },
    LIMITS,
    onStream,
  );
  const frames = async (): Promise<Frame[]> => {
    await new Promise((r) => setImmediate(r));
    const reader = new FrameReader(1 << 24);
    const out: Frame[] = [];
    reader.push(Buffer.concat([PREFACE, ...written.splice(0)]), out);
    return out;
  };
  return { conn, frames, ended: () => ended, destroyed: () => destroyed };
}

const SETTINGS = frame(Type.SETTINGS, 0, 0);

const goawayCode = (fs: Frame[]) => {
  const g = fs.find((f) => f.type === Type.GOAWAY);
  return g ? g.payload.readUInt32BE(4) : undefined;
};

const request = (stream: number, end = true) =>
  frame(
    Type.HEADERS,
    0x4 | (end ? 0x1 : 0),
    stream,
    headerBlockOf([[":method", "POST"], [":path", "/s/M"], ["content-type", "application/grpc"]]),
  );

function headerBlockOf(headers: [string, string][]): Buffer {
  // Literal without indexing, new name, no Huffman: simple and valid HPACK.
  const parts: Buffer[] = [];
  for (const [n, v] of headers) {
    parts.push(Buffer.from([0, n.length]), Buffer.from(n), Buffer.from([v.length]), Buffer.from(v));
  }
  return Buffer.concat(parts);
}

Deno.test("lean h2: a bad preface, an oversized frame, DATA on stream 0 end the connection", async () => {
  for (
    const [bytes, code] of [
      [Buffer.from("GET / HTTP/1.1\r\n\r\n"), ErrorCode.PROTOCOL_ERROR],
      [
        Buffer.concat([PREFACE, SETTINGS, frame(Type.DATA, 0, 1, Buffer.alloc(20_000))]),
        ErrorCode.FRAME_SIZE_ERROR,
      ],
      [
        Buffer.concat([PREFACE, SETTINGS, frame(Type.DATA, 0, 0, Buffer.alloc(4))]),
        ErrorCode.PROTOCOL_ERROR,
      ],
      [
        Buffer.concat([
          PREFACE,
          SETTINGS,
          frame(Type.HEADERS, 0x5, 1, Buffer.from([0xff, 0xff, 0xff])),
        ]),
        ErrorCode.COMPRESSION_ERROR,
      ],
      [
        Buffer.concat([
          PREFACE,
          SETTINGS,
          frame(Type.HEADERS, 0x5, 2, headerBlockOf([[":path", "/"]])),
        ]),
        ErrorCode.PROTOCOL_ERROR,
      ],
      [
        Buffer.concat([PREFACE, SETTINGS, frame(Type.SETTINGS, 0, 0, Buffer.alloc(5))]),
        ErrorCode.FRAME_SIZE_ERROR,
      ],
      [
        Buffer.concat([PREFACE, SETTINGS, frame(Type.PING, 0, 0, Buffer.alloc(3))]),
        ErrorCode.FRAME_SIZE_ERROR,
      ],
      [
        Buffer.concat([PREFACE, SETTINGS, frame(Type.CONTINUATION, 0x4, 1, Buffer.alloc(1))]),
        ErrorCode.PROTOCOL_ERROR,
      ],
    ] as const
  ) {
    const c = open();
    c.conn.receive(bytes);
    const fs = await c.frames();
    assert.equal(goawayCode(fs), code, `${bytes.subarray(24, 28).toString("hex")}`);
    assert.ok(c.ended(), "the socket is ended");
  }
});

Deno.test("lean h2: PING is answered, unknown frames ignored, a request reaches its stream", async () => {
  const seen: H2Stream[] = [];
  const c = open((s) => {
    seen.push(s);
    s.onend = () => {
      s.message(Buffer.from("pong"));
      s.finish(0);
    };
  });
  c.conn.receive(Buffer.concat([
    PREFACE,
    frame(Type.SETTINGS, 0, 0),
    frame(0x42, 0, 0, Buffer.from("unknown")),
    frame(Type.PING, 0, 0, Buffer.from("12345678")),
    request(1),
  ]));
  const fs = await c.frames();
  assert.equal(goawayCode(fs), undefined);
  const ping = fs.find((f) => f.type === Type.PING);
  assert.equal(ping?.flags, 1);
  assert.equal(ping?.payload.toString(), "12345678");
  assert.equal(seen.length, 1);
  assert.equal(seen[0].headers.get(":path"), "/s/M");
  const data = fs.filter((f) => f.type === Type.DATA && f.stream === 1);
  assert.equal(Buffer.concat(data.map((f) => f.payload)).subarray(5).toString(), "pong");
  const last = fs.filter((f) => f.stream === 1).at(-1)!;
  assert.equal(last.type, Type.HEADERS);
  assert.equal(last.flags & 0x1, 1, "trailers end the stream");
});

Deno.test("lean h2: replies wait for the window; RST_STREAM and stream limits", async () => {
  let reset = 0;
  const c = open((s) => {
    s.onreset = () => reset++;
    s.onend = () => {
      s.message(Buffer.alloc(100, 7));
      s.finish(0);
    };
  });
  // The client's stream window: 10 bytes.
  const settings = Buffer.alloc(6);
  settings.writeUInt16BE(0x4, 0);
  settings.writeUInt32BE(10, 2);
  c.conn.receive(Buffer.concat([PREFACE, frame(Type.SETTINGS, 0, 0, settings), request(1)]));
  let fs = await c.frames();
  const sent = () =>
    fs.filter((f) => f.type === Type.DATA).reduce((n, f) => n + f.payload.length, 0);
  assert.equal(sent(), 10, "only the window");
  const inc = Buffer.alloc(4);
  inc.writeUInt32BE(1000, 0);
  c.conn.receive(frame(Type.WINDOW_UPDATE, 0, 1, inc));
  fs = await c.frames();
  assert.equal(sent(), 95, "the rest after WINDOW_UPDATE");
  assert.ok(fs.some((f) => f.type === Type.HEADERS && (f.flags & 1)), "then the trailers");
  // A stream the client resets is told so; past maxConcurrentStreams: REFUSED_STREAM.
  c.conn.receive(Buffer.concat([3, 5, 7, 9, 11].map((id) => request(id, false))));
  c.conn.receive(frame(Type.RST_STREAM, 0, 3, Buffer.alloc(4)));
  fs = await c.frames();
  assert.equal(reset, 1);
  const refused = fs.find((f) => f.type === Type.RST_STREAM && f.stream === 11);
  assert.equal(refused?.payload.readUInt32BE(0), ErrorCode.REFUSED_STREAM);
  assert.equal(c.conn.openStreams, 3);
  // GOAWAY from the client: open streams may finish; the client closes the connection.
  c.conn.receive(frame(Type.GOAWAY, 0, 0, Buffer.alloc(8)));
  assert.ok(!c.ended());
  settings.writeUInt32BE(65_535, 2); // a larger INITIAL_WINDOW_SIZE reaches open streams too
  c.conn.receive(frame(Type.SETTINGS, 0, 0, settings));
  for (const id of [5, 7, 9]) c.conn.receive(frame(Type.DATA, 1, id, Buffer.alloc(0)));
  fs = await c.frames();
  assert.equal(c.conn.openStreams, 0, "the open streams were answered");
  assert.equal(fs.filter((f) => f.type === Type.HEADERS && (f.flags & 1)).length, 3);
  c.conn.receive(request(13));
  fs = await c.frames();
  const late = fs.find((f) => f.type === Type.RST_STREAM && f.stream === 13);
  assert.equal(late?.payload.readUInt32BE(0), ErrorCode.REFUSED_STREAM, "no new streams");
  assert.ok(!c.ended(), "the client closes it");
});

Deno.test("lean h2: a flood of empty CONTINUATION frames ends the connection", async () => {
  const c = open();
  const flood = [PREFACE, frame(Type.SETTINGS, 0, 0), frame(Type.HEADERS, 0, 1)];
  for (let i = 0; i < 5000; i++) flood.push(frame(Type.CONTINUATION, 0, 1));
  c.conn.receive(Buffer.concat(flood));
  assert.equal(goawayCode(await c.frames()), ErrorCode.ENHANCE_YOUR_CALM);
  assert.ok(c.ended());
});

Deno.test("lean h2: the preface must go on with SETTINGS; frames on idle streams", async () => {
  for (
    const bytes of [
      Buffer.concat([PREFACE, frame(Type.PING, 0, 0, Buffer.alloc(8))]),
      Buffer.concat([PREFACE, SETTINGS, frame(Type.RST_STREAM, 0, 5, Buffer.alloc(4))]),
      Buffer.concat([
        PREFACE,
        SETTINGS,
        frame(Type.WINDOW_UPDATE, 0, 5, Buffer.from([0, 0, 0, 1])),
      ]),
    ]
  ) {
    const c = open();
    c.conn.receive(bytes);
    assert.equal(goawayCode(await c.frames()), ErrorCode.PROTOCOL_ERROR);
  }
  // GOAWAY shorter than 8 bytes: FRAME_SIZE_ERROR.
  const c = open();
  c.conn.receive(Buffer.concat([PREFACE, SETTINGS, frame(Type.GOAWAY, 0, 0, Buffer.alloc(4))]));
  assert.equal(goawayCode(await c.frames()), ErrorCode.FRAME_SIZE_ERROR);
});

Deno.test("lean h2: a handler that throws resets its stream, not the connection", async () => {
  const c = open((s) => {
    if (s.id === 1) throw new Error("a bug in a handler");
    s.onend = () => s.finish(0);
  });
  c.conn.receive(Buffer.concat([PREFACE, SETTINGS, request(1), request(3)]));
  const fs = await c.frames();
  assert.equal(goawayCode(fs), undefined);
  const rst = fs.find((f) => f.type === Type.RST_STREAM && f.stream === 1);
  assert.equal(rst?.payload.readUInt32BE(0), ErrorCode.INTERNAL_ERROR);
  assert.ok(fs.some((f) => f.type === Type.HEADERS && f.stream === 3), "stream 3 is answered");
});

Deno.test("lean h2: streams reset while their handlers work still count (rapid reset)", async () => {
  const held: H2Stream[] = [];
  const c = open((s) => {
    s.onend = () => {
      s.busy = true; // a unary handler at work
      held.push(s);
    };
  });
  // maxConcurrentStreams is 4: four calls, each reset at once by the client.
  const burst = [PREFACE, SETTINGS];
  for (const id of [1, 3, 5, 7]) {
    burst.push(request(id), frame(Type.RST_STREAM, 0, id, Buffer.from([0, 0, 0, 8])));
  }
  c.conn.receive(Buffer.concat([...burst, request(9)]));
  let fs = await c.frames();
  const refused = fs.find((f) => f.type === Type.RST_STREAM && f.stream === 9);
  assert.equal(refused?.payload.readUInt32BE(0), ErrorCode.REFUSED_STREAM);
  assert.equal(held.length, 4);
  held[0].release(); // one handler is done: room for one more
  c.conn.receive(request(11));
  fs = await c.frames();
  assert.ok(!fs.some((f) => f.type === Type.RST_STREAM && f.stream === 11));
  assert.equal(held.length, 5);
});

Deno.test("lean h2: too many pings end the connection; pings beside replies do not", async () => {
  const ping = (i: number) => frame(Type.PING, 0, 0, Buffer.alloc(8, i));
  const c = open((s) => s.onend = () => s.finish(0));
  c.conn.receive(Buffer.concat([PREFACE, SETTINGS, ping(1), ping(2), ping(3)]));
  let fs = await c.frames();
  assert.equal(fs.filter((f) => f.type === Type.PING).length, 3, "two strikes are let pass");
  // A reply in between forgives them (a client probing its window while it reads).
  c.conn.receive(request(1));
  await c.frames();
  c.conn.receive(Buffer.concat([ping(4), ping(5), ping(6)]));
  fs = await c.frames();
  assert.equal(goawayCode(fs), undefined);
  c.conn.receive(ping(7));
  fs = await c.frames();
  assert.equal(goawayCode(fs), ErrorCode.ENHANCE_YOUR_CALM);
  const g = fs.find((f) => f.type === Type.GOAWAY)!;
  assert.equal(g.payload.subarray(8).toString(), "too_many_pings");
  assert.ok(c.ended());
});

Deno.test("lean h2: a client that does not close after our end is cut off", async () => {
  const c = open(() => {}, true);
  c.conn.receive(Buffer.from("GET / HTTP/1.1\r\n\r\n"));
  assert.ok(c.ended(), "ended at once (GOAWAY PROTOCOL_ERROR)");
  assert.ok(!c.destroyed());
  await new Promise((r) => setTimeout(r, 60));
  assert.ok(c.destroyed(), "destroyed after closeGraceMs");
});
