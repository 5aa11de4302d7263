// The lean gRPC transport's HTTP/2 edges against real broker processes on Deno and Bun, with
// a raw frame client (tests/support/h2_raw.ts) doing what grpc-js never does: a client that
// never reads its replies is not read from (the broker's memory stays flat); idle
// connections and ones that never send the preface are closed; an oversized request is
// refused as soon as its length prefix is seen (RESOURCE_EXHAUSTED), a compressed one with
// INTERNAL, on unary calls and on Telemetry; and through grpc-js, messages larger than a
// frame and than the initial window both ways, in plaintext and over TLS.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { readFileSync } from "node:fs";
import { RUNTIMES } from "./harness/process.ts";
import { startBroker } from "./harness/broker.ts";
import { makeTestPki, pkiUnavailable } from "./harness/tls.ts";
import * as grpc from "@grpc/grpc-js";
import { connectRaw, rawCall } from "./support/grpc_raw.ts";
import { loadMessagingService } from "../functions/grpc/proto.ts";
import { frame, grpcMessage, hpackInt, RawH2, requestBlock, Type } from "./support/h2_raw.ts";

const MIB = 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A request's protobuf bytes, as grpc-js would send them. */
function encoded(rpc: string, request: unknown): Buffer {
  const m = Object.values(loadMessagingService()).find((d) => d.originalName === rpc)!;
  return grpcMessage(m.requestSerialize(request));
}

/** A ReceiveMessage request for `group` on `topic`, long polling `pollMs`. */
const receiveReq = (group: string, topic: string, pollMs: number) =>
  encoded("receiveMessage", {
    group: { name: group },
    messageQueue: { topic: { name: topic } },
    filterExpression: { type: 1, expression: "*" },
    batchSize: 1,
    invisibleDuration: { seconds: 30 },
    longPollingTimeout: { nanos: (pollMs % 1000) * 1e6, seconds: Math.floor(pollMs / 1000) },
  });

/** Resident memory of a process (Linux), MiB. */
function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** A client that sends requests and never reads the replies: the broker's memory stays
 * flat (it stops reading that client), and it serves on. */
async function unreadReplies(pid: number, connect: (hello: boolean) => Promise<RawH2>) {
  const raw = await connect(true);
  raw.socket.pause(); // reads nothing from here on
  // A 4000-byte :path indexed once; each later request names it with one byte and is
  // answered with ~4 KB (UNIMPLEMENTED, the path in grpc-message): 50 000 requests of
  // 12 bytes, 1000 at a time (grpcH2StreamsMax), would be ~200 MB of replies held in
  // the broker without backpressure.
  const path = "/x/" + "p".repeat(4000);
  const first = Buffer.concat([Buffer.from([0x83, 0x86, 0x44]), hpackInt(0, 7, 4000 + 3)]);
  const before = rssMiB(pid);
  raw.send(raw.headers(1, Buffer.concat([first, Buffer.from(path)]), true));
  for (let id = 3, batch = 0; batch < 50; batch++) {
    const blocks = [];
    for (let i = 0; i < 1000; i++, id += 2) {
      blocks.push(raw.headers(id, Buffer.from([0x83, 0x86, 0xbe]), true));
    }
    raw.send(...blocks);
    await sleep(30);
  }
  await sleep(1000);
  const grown = rssMiB(pid) - before;
  raw.close();
  assert.ok(grown < 60, `the broker grew by ${grown.toFixed(0)} MiB`);
  const ok = await connect(true);
  ok.send(ok.headers(1, requestBlock("Bogus"), true));
  assert.equal((await ok.status(1)).code, 12);
  ok.close();
}

for (const runtime of RUNTIMES) {
  Deno.test({
    name: `lean gRPC transport on ${runtime}: HTTP/2 edges`,
    fn: async (t) => {
      await using b = await startBroker(runtime, {
        env: {
          MQ_GRPC_H2_IDLE_MS: "700",
          MQ_PULL_WAIT_MS_MAX: "3000",
          // Two receives can long-poll at once (each holds its topic and its retry topic).
          MQ_HELD_PULLS_MAX: "4",
          MQ_GRPC_H2_INBOUND_BYTES_MAX: String(4 * MIB),
          MQ_GRPC_H2_KEEPALIVE_MS: "1500",
          MQ_GRPC_H2_KEEPALIVE_TIMEOUT_MS: "500",
        },
      });
      const address = b.grpc!;
      await b.client.upsertTopic("Big", { readQueueNums: 1, writeQueueNums: 1 });
      await b.client.upsertGroup("big-side", { consumeFromWhere: "FIRST_OFFSET" });
      await b.client.upsertTopic("Polled", { readQueueNums: 1, writeQueueNums: 1 });
      await b.client.upsertTopic("Sink", { readQueueNums: 1, writeQueueNums: 1 });
      await b.client.upsertGroup("poll-side", { consumeFromWhere: "FIRST_OFFSET" });
      // The first connection loads the transport; later ones meet it warm.
      const warm = await RawH2.connect(address);
      await warm.waitFor((f) => f.type === Type.SETTINGS, 10_000);
      warm.close();

      await t.step(
        "a client that does not read its replies is not read from",
        () => unreadReplies(b.child.pid, (hello) => RawH2.connect(address, hello)),
      );

      await t.step("idle connections and ones without a preface are closed", async () => {
        const idle = await RawH2.connect(address);
        const silent = await RawH2.connect(address, false);
        assert.ok(await idle.waitClosed(5000), "an idle connection is closed");
        const goaway = idle.frames.find((f) => f.type === Type.GOAWAY);
        assert.equal(goaway?.payload.readUInt32BE(4), 0, "GOAWAY NO_ERROR first");
        assert.ok(await silent.waitClosed(5000), "a connection without a preface is closed");
        // A connection with a call open is not idle, however long the call takes.
        const busy = await RawH2.connect(address);
        busy.send(busy.headers(1, requestBlock("Telemetry"), false));
        assert.ok(!(await busy.waitClosed(1500)), "a Telemetry stream keeps it open");
        busy.close();
      });

      await t.step(
        "an oversized request is refused at its prefix; compressed: INTERNAL",
        async () => {
          const raw = await RawH2.connect(address);
          // SendMessage claiming 9 MiB (grpcRequestBytesMax is 8 MiB); the rest never comes.
          const prefix = Buffer.from([0, 0, 0x90, 0, 0]);
          raw.send(raw.headers(1, requestBlock("SendMessage"), false), raw.data(1, prefix, false));
          const big = await raw.status(1, 3000);
          assert.equal(big.code, 8, `RESOURCE_EXHAUSTED: ${big.message}`);
          const rst = await raw.waitFor((f) => f.type === Type.RST_STREAM && f.stream === 1, 2000);
          assert.equal(rst?.payload.readUInt32BE(0), 0, "then RST_STREAM NO_ERROR: stop sending");
          // The same on Telemetry (a bidi stream), and a compressed message: INTERNAL.
          raw.send(raw.headers(3, requestBlock("Telemetry"), false), raw.data(3, prefix, false));
          assert.equal((await raw.status(3, 3000)).code, 8);
          raw.send(
            raw.headers(5, requestBlock("QueryRoute"), false),
            raw.data(5, grpcMessage(Buffer.from([0x0a, 0]), true), true),
          );
          assert.equal((await raw.status(5, 3000)).code, 13);
          // The connection serves on.
          raw.send(raw.headers(7, requestBlock("Bogus"), true));
          assert.equal((await raw.status(7)).code, 12);
          raw.close();
        },
      );

      await t.step(
        "a connection holds at most grpcH2InboundBytesMax of partial requests",
        async () => {
          const raw = await RawH2.connect(address);
          // Three SendMessage calls each claim 3 MiB and send half: the third goes over 4 MiB.
          const half = Buffer.concat([
            Buffer.from([0, 0, 0x30, 0, 0]),
            Buffer.alloc(1.5 * MIB, 1),
          ]);
          for (const id of [1, 3, 5]) {
            raw.send(
              raw.headers(id, requestBlock("SendMessage"), false),
              raw.data(id, half, false),
            );
          }
          const over = await raw.status(5, 5000);
          assert.equal(over.code, 8, `RESOURCE_EXHAUSTED: ${over.message}`);
          assert.equal(
            raw.frames.filter((f) => f.type === Type.HEADERS && f.headers!.has("grpc-status"))
              .length,
            1,
            "the first two wait for the rest",
          );
          // Reset, they hold nothing more: a whole 3 MiB request passes.
          for (const id of [1, 3]) {
            raw.send(frame(Type.RST_STREAM, 0, id, Buffer.from([0, 0, 0, 8])));
          }
          raw.send(
            raw.headers(7, requestBlock("SendMessage"), false),
            raw.data(
              7,
              encoded("sendMessage", {
                messages: [{
                  topic: { name: "Sink" },
                  systemProperties: { messageId: "01" + "cd".repeat(16), messageType: 1 },
                  body: Buffer.alloc(3 * MIB, 2),
                }],
              }),
              true,
            ),
          );
          assert.equal((await raw.status(7, 5000)).code, 0);
          raw.close();
        },
      );

      await t.step("keepalive: a client that answers no PING is closed", async () => {
        const gone = await RawH2.connect(address, true, false);
        const live = await RawH2.connect(address);
        for (const c of [gone, live]) c.send(c.headers(1, requestBlock("Telemetry"), false));
        const ping = await gone.waitFor((f) => f.type === Type.PING && !(f.flags & 1), 4000);
        assert.ok(ping, "a quiet client is sent a PING");
        assert.ok(await gone.waitClosed(3000), "no answer: the connection ends");
        assert.ok(!live.closed, "a client that answers stays");
        assert.ok(live.frames.some((f) => f.type === Type.PING), "it was pinged too");
        gone.close();
        live.close();
      });

      await t.step("messages beyond a frame and the initial window, both ways", async () => {
        const client = connectRaw(address, undefined);
        try {
          const body = Buffer.alloc(3 * 1024 * 1024 + 7, "m");
          const sent = await rawCall(client, "sendMessage", {
            messages: [{
              topic: { name: "Big" },
              systemProperties: { messageId: "01" + "ab".repeat(16), messageType: 1 },
              body,
            }],
          }) as { status: { code: string } };
          assert.equal(sent.status.code, 20000, "OK");
          const got = await rawCall(client, "receiveMessage", {
            group: { name: "big-side" },
            messageQueue: { topic: { name: "Big" } },
            filterExpression: { type: 1, expression: "*" },
            batchSize: 4,
            invisibleDuration: { seconds: 30 },
            longPollingTimeout: { seconds: 2 },
          }) as { message?: { body: Buffer } }[];
          const m = got.find((r) => r.message)?.message;
          assert.equal(m?.body.length, body.length);
          assert.ok(Buffer.from(m!.body).equals(body));
        } finally {
          client.close();
        }
      });

      await t.step("long polls the client resets give their holds back", async () => {
        const raw = await RawH2.connect(address);
        // Six receives in turn, each cancelled (RST_STREAM CANCEL) while it waits: with
        // heldPullsMax 4, leaked holds would leave none for the receive after them.
        for (let id = 1; id <= 11; id += 2) {
          raw.send(
            raw.headers(id, requestBlock("ReceiveMessage", [["grpc-timeout", "5S"]]), false),
            raw.data(id, receiveReq("poll-side", "Polled", 2500), true),
          );
          await sleep(150);
          raw.send(frame(Type.RST_STREAM, 0, id, Buffer.from([0, 0, 0, 8])));
        }
        const started = Date.now();
        raw.send(
          raw.headers(13, requestBlock("ReceiveMessage", [["grpc-timeout", "5S"]]), false),
          raw.data(13, receiveReq("poll-side", "Polled", 2500), true),
        );
        await sleep(400);
        await b.client.produce("Polled", { body: "after the cancels" });
        assert.equal((await raw.status(13, 4000)).code, 0);
        const data = raw.frames.filter((f) => f.type === Type.DATA && f.stream === 13);
        const bytes = Buffer.concat(data.map((f) => f.payload));
        assert.ok(bytes.includes(Buffer.from("after the cancels")), "the waiting receive got it");
        assert.ok(Date.now() - started < 2000, "woken by the message, not after the poll");
        raw.close();
      });

      await t.step(
        "shutdown: GOAWAY, calls in flight finish, new streams refused, closed",
        async () => {
          const raw = await RawH2.connect(address);
          raw.send(
            raw.headers(1, requestBlock("ReceiveMessage", [["grpc-timeout", "10S"]]), false),
            raw.data(1, receiveReq("big-side", "Polled", 1200), true),
          );
          await sleep(200);
          const started = Date.now();
          const stopping = b.stop();
          const goaway = await raw.waitFor((f) => f.type === Type.GOAWAY, 3000);
          assert.equal(goaway?.payload.readUInt32BE(4), 0, "GOAWAY NO_ERROR");
          assert.equal(goaway?.payload.readUInt32BE(0), 1, "last stream: the one in flight");
          raw.send(raw.headers(3, requestBlock("Bogus"), true));
          const refused = await raw.waitFor(
            (f) => f.type === Type.RST_STREAM && f.stream === 3,
            2000,
          );
          assert.equal(refused?.payload.readUInt32BE(0), 7, "REFUSED_STREAM");
          assert.equal((await raw.status(1, 3000)).code, 0, "the long poll in flight is answered");
          assert.ok(await raw.waitClosed(3000), "the broker closes the connection");
          await stopping;
          assert.ok(Date.now() - started < 5000, "stopped within the bound");
        },
      );
    },
  });
}

for (const runtime of RUNTIMES) {
  Deno.test({
    name: `lean gRPC transport on ${runtime} over TLS: a grpc-js call beyond a frame and a window`,
    ignore: pkiUnavailable() !== undefined,
    fn: async () => {
      using pki = makeTestPki();
      await using b = await startBroker(runtime, {
        env: { MQ_GRPC_TLS_CERT_FILE: pki.certFile, MQ_GRPC_TLS_KEY_FILE: pki.keyFile },
      });
      const ca = readFileSync(pki.caFile);
      const address = b.grpc!;
      await b.client.upsertTopic("Tls", { readQueueNums: 1, writeQueueNums: 1 });
      const service = loadMessagingService();
      // Deno's TLS refuses an IP as servername, which grpc-js sends: another name, and the
      // certificate's IP SAN is not checked (its CA is).
      const client = new grpc.Client(
        address,
        grpc.credentials.createSsl(ca, null, null, { checkServerIdentity: () => undefined }),
        { "grpc.ssl_target_name_override": "edgemq.test" },
      );
      try {
        // A 1 MiB message: many frames, past the initial windows, through TLS.
        const m = Object.values(service).find((d) => d.originalName === "sendMessage")!;
        const sent = await new Promise<{ status: { code: number } }>((resolve, reject) =>
          client.makeUnaryRequest(
            m.path,
            m.requestSerialize,
            m.responseDeserialize,
            {
              messages: [{
                topic: { name: "Tls" },
                systemProperties: { messageId: "01" + "ef".repeat(16), messageType: 1 },
                body: Buffer.alloc(MIB, 3),
              }],
            },
            new grpc.Metadata(),
            { deadline: Date.now() + 10_000 },
            (err, res) => err ? reject(err) : resolve(res as { status: { code: number } }),
          )
        );
        assert.equal(sent.status.code, 20000);
      } finally {
        client.close();
      }
    },
  });
}
