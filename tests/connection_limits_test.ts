// Connections time out and are counted (issue #19, point 4), against real broker processes
// on Deno and Bun, with raw node:net sockets: a slow-loris head is cut at
// httpHeaderTimeoutMs, an idle keep-alive connection at httpIdleTimeoutMs, a long poll
// held longer than that is answered, and a connection past httpConnectionsMax is closed
// at once without an answer.
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { startBroker, startFunctions } from "./harness/broker.ts";
import { RUNTIMES, startChild } from "./harness/process.ts";

const HEADER_TIMEOUT_MS = 1500;
const IDLE_TIMEOUT_MS = 1500;
/** Longer than the idle timeout: a held pull must not count as idle. */
const LONG_POLL_MS = 4000;
/** The guard sweeps for late connections every tenth of the shortest timeout: slack. */
const CLOSE_SLACK_MS = 1500;
const HEALTH = "GET /healthz HTTP/1.1\r\nHost: broker\r\n\r\n";

/** A raw client socket that records what it received and when it was closed. */
class Raw implements AsyncDisposable {
  readonly socket: Socket;
  readonly openedAt = performance.now();
  received = "";
  closedAt: number | undefined;
  readonly connected: Promise<void>;
  readonly closed: Promise<number>;

  /** allowHalfOpen: the socket does not answer the server's FIN with its own. */
  constructor(url: string, options: { allowHalfOpen?: boolean } = {}) {
    const { hostname, port } = new URL(url);
    this.socket = connect({ port: Number(port), host: hostname, ...options });
    this.socket.setEncoding("utf8");
    this.socket.on("data", (chunk: string) => (this.received += chunk));
    this.socket.on("error", () => {}); // a reset is a close here
    this.connected = new Promise((resolve) => this.socket.once("connect", () => resolve()));
    this.closed = new Promise((resolve) =>
      this.socket.once("close", () => resolve(this.closedAt = performance.now()))
    );
  }

  /** Waits for `count` complete responses (status lines) after sending nothing more. */
  async responses(count: number, deadlineMs = 10_000): Promise<void> {
    const until = performance.now() + deadlineMs;
    while ((this.received.match(/HTTP\/1\.1 \d{3}/g)?.length ?? 0) < count) {
      if (this.closedAt !== undefined) throw new Error(`closed before ${count} responses`);
      if (performance.now() > until) throw new Error(`no ${count} responses: ${this.received}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  async [Symbol.asyncDispose]() {
    this.socket.destroy();
    await this.closed;
  }
}

/** Drips a request head one byte per 100 ms; returns a function that stops it. */
function drip(raw: Raw): () => void {
  const head = "GET /healthz HTTP/1.1\r\nHost: broker\r\nX-Slow: " + "a".repeat(100);
  let i = 0;
  const timer = setInterval(() => {
    if (raw.closedAt === undefined && i < head.length) raw.socket.write(head[i++]);
  }, 100);
  return () => clearInterval(timer);
}

/** Resolves with the close time, or rejects if the socket is still open after `ms`. */
function closedWithin(raw: Raw, ms: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`connection still open after ${ms} ms`)),
      ms,
    );
    raw.closed.then((at) => {
      clearTimeout(timer);
      resolve(at);
    });
  });
}

for (const runtime of RUNTIMES) {
  Deno.test(`HTTP connections time out (${runtime})`, async (t) => {
    await using broker = await startBroker(runtime, {
      env: {
        MQ_HTTP_CONNECTION_GUARD: "on",
        MQ_HTTP_HEADER_TIMEOUT_MS: String(HEADER_TIMEOUT_MS),
        MQ_HTTP_IDLE_TIMEOUT_MS: String(IDLE_TIMEOUT_MS),
      },
    });

    await t.step("a head sent one byte at a time is cut at httpHeaderTimeoutMs", async () => {
      await using raw = new Raw(broker.url);
      await raw.connected;
      const stop = drip(raw);
      try {
        const at = await closedWithin(raw, HEADER_TIMEOUT_MS + CLOSE_SLACK_MS);
        assert.ok(
          at - raw.openedAt >= HEADER_TIMEOUT_MS - 50,
          `closed early: ${at - raw.openedAt}`,
        );
      } finally {
        stop();
      }
      assert.equal(raw.received, "");
    });

    await t.step("an idle keep-alive connection is cut at httpIdleTimeoutMs", async () => {
      await using raw = new Raw(broker.url);
      await raw.connected;
      raw.socket.write(HEALTH);
      await raw.responses(1);
      const answeredAt = performance.now();
      const at = await closedWithin(raw, IDLE_TIMEOUT_MS + CLOSE_SLACK_MS);
      assert.ok(at - answeredAt >= IDLE_TIMEOUT_MS - 100, `closed early: ${at - answeredAt}`);
    });

    await t.step("a long poll held past the idle timeout is answered", async () => {
      await broker.client.upsertTopic("ConnLongPoll", { readQueueNums: 1, writeQueueNums: 1 });
      await using raw = new Raw(broker.url);
      await raw.connected;
      const sentAt = performance.now();
      raw.socket.write(
        `GET /v1/topics/ConnLongPoll/queues/0/messages?offset=0&waitMs=${LONG_POLL_MS} HTTP/1.1\r\nHost: broker\r\n\r\n`,
      );
      await raw.responses(1, LONG_POLL_MS + 5000);
      assert.match(raw.received, /^HTTP\/1\.1 200/);
      assert.ok(performance.now() - sentAt >= LONG_POLL_MS - 100);
      // Still usable: the next request on the same connection is answered.
      raw.socket.write(HEALTH);
      await raw.responses(2);
    });
  });

  Deno.test(`a graceful stop closes idle keep-alive connections at once (${runtime})`, async () => {
    // The idle timeout (30 s) and the shutdown grace (5 s) both outlast the wait below.
    await using broker = await startBroker(runtime, {
      env: { MQ_HTTP_CONNECTION_GUARD: "on", MQ_SHUTDOWN_GRACE_MS: "5000" },
    });
    // A client that never sends its own FIN must not hold the stop up.
    await using raw = new Raw(broker.url, { allowHalfOpen: true });
    const ended = new Promise<void>((resolve) => raw.socket.once("end", () => resolve()));
    await raw.connected;
    raw.socket.write(HEALTH);
    await raw.responses(1);
    const stopping = performance.now();
    await broker.stop(); // throws unless the broker printed its "stopped" line
    await ended;
    assert.ok(performance.now() - stopping < 4000, "the stop waited for the idle connection");
  });

  Deno.test(`HTTP connections past httpConnectionsMax are closed at once (${runtime})`, async () => {
    const max = 4;
    await using broker = await startBroker(runtime, {
      env: { MQ_HTTP_CONNECTION_GUARD: "on", MQ_HTTP_CONNECTIONS_MAX: String(max) },
    });
    const held: Raw[] = [];
    try {
      for (let i = 0; i < max; i++) {
        const raw = new Raw(broker.url);
        held.push(raw);
        await raw.connected;
        raw.socket.write(HEALTH);
        await raw.responses(1);
      }
      await using extra = new Raw(broker.url);
      extra.socket.write(HEALTH);
      await closedWithin(extra, 1000);
      assert.equal(extra.received, "");
      // One closed makes room for one more.
      held.shift()!.socket.destroy();
      for (let attempt = 0;; attempt++) {
        await using next = new Raw(broker.url);
        next.socket.write(HEALTH);
        const answered = await next.responses(1, 1000).then(() => true, () => false);
        if (answered) break;
        assert.ok(attempt < 20, "no connection accepted after one was closed");
      }
    } finally {
      for (const raw of held) await raw[Symbol.asyncDispose]();
    }
  });
}

Deno.test("split-mode functions apply the same connection settings (deno and bun)", async (t) => {
  const token = "kv-test-token-0123456789";
  await using kvHost = startChild("deno", "tools/kv_host/main.ts", [
    "--port",
    "0",
    "--token",
    token,
  ]);
  const { url: kvUrl } = await kvHost.waitForJson<{ url: string }>(
    "KV host url",
    (v) => typeof v.url === "string",
  );
  for (const runtime of RUNTIMES) {
    await t.step(runtime, async () => {
      await using functions = await startFunctions(runtime, {
        kvUrl,
        kvToken: token,
        env: {
          MQ_HTTP_CONNECTION_GUARD: "on",
          MQ_HTTP_HEADER_TIMEOUT_MS: String(HEADER_TIMEOUT_MS),
          MQ_HTTP_CONNECTIONS_MAX: "1",
        },
      });
      await using raw = new Raw(functions.url);
      await raw.connected;
      const stop = drip(raw);
      try {
        // The one connection allowed is taken: another is closed at once.
        await using extra = new Raw(functions.url);
        extra.socket.write(HEALTH);
        await closedWithin(extra, 1000);
        assert.equal(extra.received, "");
        await closedWithin(raw, HEADER_TIMEOUT_MS + CLOSE_SLACK_MS);
        assert.equal(raw.received, "");
      } finally {
        stop();
      }
    });
  }
});
