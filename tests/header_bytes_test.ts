// Header bytes against a real broker on each runtime (issue #19, point 6): both runtimes
// hand a header value over as one character per byte, the produce route reads text
// headers as UTF-8, and a value that is not UTF-8 is 400 invalid-header, storing nothing.
import assert from "node:assert/strict";
import { connect } from "node:net";
import { startBroker } from "./harness/broker.ts";
import { RUNTIMES } from "./harness/process.ts";

for (const runtime of RUNTIMES) {
  Deno.test(`broker on ${runtime}: an Mq-Tag of invalid UTF-8 is refused, a UTF-8 one is kept`, async () => {
    await using broker = await startBroker(runtime);
    await broker.client.upsertTopic("T", { readQueueNums: 1, writeQueueNums: 1 });
    const before = (await broker.client.health()).commitLogMaxOffset;

    for (const bad of [[0xff, 0xfe], [0xc3], [0x41, 0x80, 0x42]]) {
      const res = await produceWithTag(broker.url, bad);
      assert.equal(res.status, 400, res.body);
      assert.equal(JSON.parse(res.body).type, "/problems/invalid-header", res.body);
    }
    assert.equal((await broker.client.health()).commitLogMaxOffset, before);

    const ok = await produceWithTag(broker.url, [0xc3, 0xa9]); // "é"
    assert.equal(ok.status, 201, ok.body);
    const pulled = await broker.client.pull("T", 0, { offset: 0, tags: "é" });
    assert.equal(pulled.messages.length, 1);
    assert.equal(pulled.messages[0].tag, "é");
  });
}

/** A produce whose Mq-Tag is exactly `tag`'s bytes (fetch would refuse them). */
function produceWithTag(url: string, tag: number[]): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(url);
  const head = "POST /v1/topics/T/messages HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" +
    "Content-Length: 1\r\nMq-Tag: ";
  const raw = new Uint8Array([
    ...new TextEncoder().encode(head),
    ...tag,
    ...new TextEncoder().encode("\r\n\r\nx"),
  ]);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(raw));
    let data = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => data += chunk);
    socket.on("end", () => {
      const end = data.indexOf("\r\n\r\n");
      const status = Number(data.slice(0, end).split(" ")[1]);
      let body = data.slice(end + 4);
      // Either runtime may answer chunked; the body is one small JSON object.
      if (/transfer-encoding: chunked/i.test(data.slice(0, end))) {
        body = body.slice(body.indexOf("\r\n") + 2, body.lastIndexOf("}") + 1);
      }
      resolve({ status, body });
    });
    socket.on("error", reject);
    socket.setTimeout(10_000, () => {
      socket.destroy();
      reject(new Error("raw request timed out"));
    });
  });
}
