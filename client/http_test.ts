// The SDK's transport against a fake fetch: retries on 429/503 honouring Retry-After,
// network errors retried only when the call is safe to repeat, deadlines, typed errors.
import assert from "node:assert/strict";
import { BrokerError, MqClient } from "./mod.ts";
import { connectFailed, retryAfterMs } from "./http.ts";
import net from "node:net";

function fake(answers: (Response | Error)[]) {
  const calls: { url: string; init: RequestInit }[] = [];
  const fetch = (url: string | URL | Request, init?: RequestInit) => {
    calls.push({ url: String(url), init: init ?? {} });
    const next = answers.shift();
    if (next === undefined) return new Promise<Response>(() => {}); // hangs
    return next instanceof Error ? Promise.reject(next) : Promise.resolve(next);
  };
  return { fetch: fetch as typeof globalThis.fetch, calls };
}

const problem = (
  status: number,
  code: string,
  headers: Record<string, string> = {},
) =>
  new Response(
    JSON.stringify({
      type: "/problems/x",
      title: "t",
      status,
      detail: "d",
      code,
    }),
    {
      status,
      headers: { "content-type": "application/problem+json", ...headers },
    },
  );
const produced = () => Response.json({ messageId: "M", topic: "t" }, { status: 201 });

Deno.test("429 and 503 are retried (Retry-After honoured), then the answer is returned", async () => {
  const { fetch, calls } = fake([
    problem(429, "TOO_MANY_WAITING", { "retry-after": "0" }),
    problem(503, "STORE_NOT_WRITABLE"),
    produced(),
  ]);
  const mq = new MqClient({ baseUrl: "http://b", fetch, retryBaseMs: 1 });
  const r = await mq.produce("t", {
    body: "x",
    tag: "a",
    keys: ["k1", "k2"],
    properties: { p: "v" },
  });
  assert.equal(r.messageId, "M");
  assert.equal(calls.length, 3);
  const h = calls[0].init.headers as Record<string, string>;
  assert.deepEqual([h["mq-tag"], h["mq-keys"], h["mq-prop-p"]], [
    "a",
    "k1 k2",
    "v",
  ]);
});

Deno.test("a 503 that may follow a write (requestSent unknown) is not retried for a produce", async () => {
  const unknown = () =>
    new Response(
      JSON.stringify({
        type: "/problems/broker-unavailable",
        title: "t",
        status: 503,
        detail: "Cannot reach the broker: connection reset",
        code: "BROKER_UNAVAILABLE",
        requestSent: "unknown",
      }),
      { status: 503, headers: { "content-type": "application/problem+json" } },
    );
  const post = fake([unknown(), produced()]);
  const mq = new MqClient({ baseUrl: "http://b", fetch: post.fetch, retryBaseMs: 1 });
  await assert.rejects(mq.produce("t", { body: "x" }), (err: BrokerError) => {
    assert.equal(err.code, "BROKER_UNAVAILABLE");
    assert.equal(err.extensions.requestSent, "unknown");
    return true;
  });
  assert.equal(post.calls.length, 1);
  // A produce with an Idempotency-Key is safe to send again.
  const keyed = fake([unknown(), produced()]);
  const mq2 = new MqClient({ baseUrl: "http://b", fetch: keyed.fetch, retryBaseMs: 1 });
  assert.equal((await mq2.produce("t", { body: "x", idempotencyKey: "K" })).messageId, "M");
  assert.equal(keyed.calls.length, 2);
});

Deno.test("retries stop after `retries`, and a Retry-After over retryMaxMs is not waited for", async () => {
  const { fetch, calls } = fake([
    problem(503, "NOT_LEADER"),
    problem(503, "NOT_LEADER"),
  ]);
  const mq = new MqClient({
    baseUrl: "http://b",
    fetch,
    retries: 1,
    retryBaseMs: 1,
  });
  await assert.rejects(
    mq.produce("t", { body: "x" }),
    (e: BrokerError) => e.code === "NOT_LEADER",
  );
  assert.equal(calls.length, 2);
  const slow = fake([
    problem(429, "TOO_MANY_WAITING", { "retry-after": "120" }),
  ]);
  const mq2 = new MqClient({ baseUrl: "http://b", fetch: slow.fetch });
  await assert.rejects(
    mq2.produce("t", { body: "x" }),
    (e: BrokerError) => e.status === 429 && e.retryAfterMs === 120_000,
  );
  assert.equal(slow.calls.length, 1);
});

Deno.test("a network error is retried only for a call safe to repeat", async () => {
  const post = fake([new TypeError("connection reset"), produced()]);
  const mq = new MqClient({
    baseUrl: "http://b",
    fetch: post.fetch,
    retryBaseMs: 1,
  });
  await assert.rejects(
    mq.produce("t", { body: "x" }),
    (e: BrokerError) => e.code === "BROKER_UNAVAILABLE" && e.status === 503,
  );
  assert.equal(post.calls.length, 1);
  const keyed = fake([new TypeError("connection reset"), produced()]);
  const mq2 = new MqClient({
    baseUrl: "http://b",
    fetch: keyed.fetch,
    retryBaseMs: 1,
  });
  assert.equal(
    (await mq2.produce("t", { body: "x", idempotencyKey: "k" })).messageId,
    "M",
  );
  assert.equal(keyed.calls.length, 2);
});

Deno.test("timeoutMs aborts the call with a TimeoutError; the caller's signal aborts it too", async () => {
  const { fetch } = fake([]);
  const hanging: typeof globalThis.fetch = (url, init) =>
    new Promise((_, reject) => {
      init?.signal?.addEventListener(
        "abort",
        () => reject(init.signal!.reason),
      );
      void fetch(url, init);
    });
  const mq = new MqClient({ baseUrl: "http://b", fetch: hanging });
  await assert.rejects(
    mq.produce("t", { body: "x" }, { timeoutMs: 20 }),
    (e: DOMException) => e.name === "TimeoutError",
  );
  const controller = new AbortController();
  const call = mq.produce("t", { body: "x" }, { signal: controller.signal });
  controller.abort(new Error("user left"));
  await assert.rejects(call, /user left/);
});

Deno.test("problem+json becomes a typed BrokerError; mapError turns it", async () => {
  const { fetch } = fake([
    problem(404, "TOPIC_NOT_FOUND"),
    problem(404, "TOPIC_NOT_FOUND"),
  ]);
  const mq = new MqClient({ baseUrl: "http://b", fetch });
  await assert.rejects(
    mq.getTopic("t"),
    (e: BrokerError) =>
      e instanceof BrokerError && e.code === "TOPIC_NOT_FOUND" &&
      e.status === 404 &&
      e.toProblem().type === "/problems/x",
  );
  const mapped = new MqClient({
    baseUrl: "http://b",
    fetch,
    mapError: (e) => new Error(e.code),
  });
  await assert.rejects(mapped.getTopic("t"), /^Error: TOPIC_NOT_FOUND$/);
});

Deno.test("Retry-After: seconds or an HTTP date", () => {
  assert.equal(retryAfterMs("3"), 3000);
  assert.equal(retryAfterMs(new Date(10_000).toUTCString(), 4000), 6000);
  assert.equal(retryAfterMs("soon"), undefined);
  assert.equal(retryAfterMs(null), undefined);
});

Deno.test("a network error says whether the request can have left: requestSent", async () => {
  // A real refused connect, and a real server that resets after reading the request.
  const closed = net.createServer();
  await new Promise<void>((r) => closed.listen(0, "127.0.0.1", () => r()));
  const closedPort = (closed.address() as net.AddressInfo).port;
  await new Promise<void>((r) => closed.close(() => r()));
  const resetter = net.createServer((s) => s.once("data", () => s.destroy()));
  await new Promise<void>((r) => resetter.listen(0, "127.0.0.1", () => r()));
  const resetPort = (resetter.address() as net.AddressInfo).port;
  try {
    const sent = async (port: number) => {
      const client = new MqClient({ baseUrl: `http://127.0.0.1:${port}`, retries: 0 });
      const err = await client.produce("t", { body: new Uint8Array([1]) }).then(
        () => undefined,
        (e) => e,
      );
      assert.ok(err instanceof BrokerError, String(err));
      assert.equal(err.code, "BROKER_UNAVAILABLE");
      return err.extensions.requestSent;
    };
    assert.equal(await sent(closedPort), false);
    assert.equal(await sent(resetPort), "unknown");
  } finally {
    resetter.close();
  }
  // Bun's shapes: a code on the TypeError.
  const bun = (code: string) => Object.assign(new TypeError(code), { code });
  assert.equal(connectFailed(bun("ECONNREFUSED")), true);
  assert.equal(connectFailed(bun("ECONNRESET")), false);
  assert.equal(connectFailed(new Error("timed out")), false);
});

Deno.test("a refused connect after the broker answered on a kept-alive connection is requestSent unknown", async () => {
  // The second request reaches the server on the pooled connection; the server then stops
  // listening and drops it. Deno's fetch sends it again on a new connection, which is
  // refused: its error says "connect" though the server read the request.
  const received: string[] = [];
  const server = net.createServer((s) => {
    let buf = "";
    s.on("data", (d) => {
      buf += d.toString("latin1");
      for (;;) {
        const head = buf.indexOf("\r\n\r\n");
        if (head < 0) return;
        const length = Number(/content-length: *(\d+)/i.exec(buf.slice(0, head))?.[1] ?? 0);
        if (buf.length < head + 4 + length) return;
        received.push(buf.slice(0, buf.indexOf(" ")));
        buf = buf.slice(head + 4 + length);
        if (received.length === 1) {
          s.write(
            "HTTP/1.1 201 Created\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}",
          );
        } else {
          server.close();
          s.destroy();
        }
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as net.AddressInfo).port;
  const client = new MqClient({ baseUrl: `http://127.0.0.1:${port}`, retries: 0 });
  try {
    await client.produce("t", { body: new Uint8Array([1]) });
    const err = await client.produce("t", { body: new Uint8Array([2]) }).then(
      () => undefined,
      (e) => e,
    );
    assert.ok(err instanceof BrokerError, String(err));
    assert.equal(received.length, 2, "the server read the second produce");
    assert.equal(err.extensions.requestSent, "unknown", err.message);
    // A call started after that failure can only have met a refused connect: not sent.
    await new Promise((r) => setTimeout(r, 5)); // a later millisecond than the failure
    const later = await client.produce("t", { body: new Uint8Array([3]) }).then(
      () => undefined,
      (e) => e,
    );
    assert.ok(later instanceof BrokerError, String(later));
    assert.equal(later.extensions.requestSent, false, later.message);
    assert.equal(received.length, 2);
  } finally {
    server.close();
  }
});
