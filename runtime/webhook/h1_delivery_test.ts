// H1WebhookClient (the webhook transport, issue #6) against loopback receivers reached
// through an explicit allowlist entry for 127.0.0.1. Deno.serve on port 0: statuses, no
// redirects, deadlines, abort, capped bodies, keep-alive reuse, TLS names, and no proxy
// from the environment. Raw node:net servers: the framings and the malformed answers a
// real server never sends (chunked, close-delimited, 1xx, bad heads, extra bytes).
import assert from "node:assert/strict";
import net from "node:net";
import { spawn } from "node:child_process";
import process from "node:process";
import { ChildRun, REPO_ROOT, runtimeBinary } from "../../tests/harness/process.ts";
import {
  type PostOutcome,
  type PostResponse,
  retryAfterMs,
  type WebhookHttpClientOptions,
} from "./http_delivery.ts";
import { createEgressPolicy, type VettedAddress } from "./ssrf.ts";
import { H1WebhookClient } from "./h1_delivery.ts";

const LOOPBACK: VettedAddress = { address: "127.0.0.1", family: 4 };
const policy = createEgressPolicy({ allowHosts: ["127.0.0.1/32", "receiver.test"] });

// A self-signed certificate for "receiver.test" only (valid 2020–2120), made for this
// test with openssl; the key protects nothing.
const TEST_CERT = `-----BEGIN CERTIFICATE-----
MIIBjzCCATWgAwIBAgIBATAKBggqhkjOPQQDAjAYMRYwFAYDVQQDDA1yZWNlaXZl
ci50ZXN0MCAXDTIwMDEwMTAwMDAwMFoYDzIxMjAwMTAxMDAwMDAwWjAYMRYwFAYD
VQQDDA1yZWNlaXZlci50ZXN0MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEzw0J
5zWHGAcvggvTRQMD76zw3myMJlmXshJdExUMFsJkOxF1Fq1QzqbklSLp6Ja4Xd4F
ecJpy5uPqkPPpFXw9KNuMGwwGAYDVR0RBBEwD4INcmVjZWl2ZXIudGVzdDAPBgNV
HRMBAf8EBTADAQH/MAsGA1UdDwQEAwIChDATBgNVHSUEDDAKBggrBgEFBQcDATAd
BgNVHQ4EFgQU/zMyZ9y3k61m56XdA2MAkGr8ryMwCgYIKoZIzj0EAwIDSAAwRQIg
VEj9gLoiPhhXrzMpFgTPNxPX+bTmhfk1ueCR9bW+rUMCIQDbednY1bnVNW9QFqFP
SbUQJO0hTkcUCkrvitkNfe37eA==
-----END CERTIFICATE-----
`;
const TEST_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgF9Azsx8FV95sWObP
yuBbIG6cps9A99UXP0mLM8uUYcGhRANCAATPDQnnNYcYBy+CC9NFAwPvrPDebIwm
WZeyEl0TFQwWwmQ7EXUWrVDOpuSVIunolrhd3gV5wmnLm4+qQ8+kVfD0
-----END PRIVATE KEY-----
`;

interface Seen {
  path: string;
  headers: Headers;
  body: Uint8Array;
  remotePort: number;
}

/** A loopback receiver; `hold()` makes the handler wait until the receiver is disposed,
 * so hanging handlers never outlive the test. */
function startReceiver(
  respond: (seen: Seen, hold: () => Promise<void>) => Response | Promise<Response>,
  tls?: { cert: string; key: string },
) {
  const seen: Seen[] = [];
  const disposed = Promise.withResolvers<void>();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {}, ...tls },
    async (request, info) => {
      const entry: Seen = {
        path: new URL(request.url).pathname,
        headers: request.headers,
        body: new Uint8Array(await request.arrayBuffer()),
        remotePort: info.remoteAddr.port,
      };
      seen.push(entry);
      return await respond(entry, () => disposed.promise);
    },
  );
  return {
    port: server.addr.port,
    seen,
    async [Symbol.asyncDispose]() {
      disposed.resolve();
      await server.shutdown();
    },
  };
}

function client(options: Partial<WebhookHttpClientOptions> = {}) {
  return new H1WebhookClient({ policy, ...options });
}

function ok(outcome: PostOutcome): PostResponse {
  assert.ok(outcome.ok, outcome.ok ? "" : `${outcome.error.code}: ${outcome.error.message}`);
  return outcome;
}

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

Deno.test("H1WebhookClient.postPinned() sends the exact body with our Host and length, returns status and body prefix", async () => {
  await using receiver = startReceiver(() =>
    new Response("accepted", { status: 202, headers: { "content-type": "text/plain" } })
  );
  await using http = client({ bodyPrefixBytes: 4 });
  const body = new TextEncoder().encode('{"type":"order.created","n":1}\n');
  const outcome = ok(
    await http.postPinned({
      url: `http://127.0.0.1:${receiver.port}/hooks/a?x=1`,
      address: LOOPBACK,
      body,
      headers: {
        "Content-Type": "application/json",
        "webhook-id": "msg_1",
        "Host": "evil.example", // ours wins
        "Content-Length": "1", // ours wins
      },
    }),
  );
  assert.equal(outcome.status, 202);
  assert.equal(text(outcome.bodyPrefix), "acce");
  assert.equal(outcome.bodyBytesRead, 8);
  assert.equal(outcome.bodyFullyRead, true);
  assert.equal(outcome.headers["content-type"], "text/plain");
  assert.equal(outcome.connectionReused, false);
  assert.ok(outcome.latencyMs >= 0);
  const [seen] = receiver.seen;
  assert.equal(seen.path, "/hooks/a");
  assert.deepEqual(seen.body, body);
  assert.equal(seen.headers.get("host"), `127.0.0.1:${receiver.port}`);
  assert.equal(seen.headers.get("content-length"), String(body.byteLength));
  assert.equal(seen.headers.get("content-type"), "application/json");
  assert.equal(seen.headers.get("webhook-id"), "msg_1");
  assert.equal(seen.headers.get("user-agent"), "edgemq-webhooks");
});

Deno.test("H1WebhookClient.postPinned() reuses a keep-alive connection for the next delivery", async () => {
  await using receiver = startReceiver(() => new Response("ok"));
  await using http = client();
  const url = `http://127.0.0.1:${receiver.port}/`;
  const first = ok(await http.postPinned({ url, address: LOOPBACK, body: "1" }));
  // Straight away, and to another path of the same origin: the same connection.
  const second = ok(
    await http.postPinned({ url: `${url}other?q=1`, address: LOOPBACK, body: "2" }),
  );
  assert.equal(first.connectionReused, false);
  assert.equal(second.connectionReused, true);
  assert.equal(receiver.seen[0].remotePort, receiver.seen[1].remotePort);
  assert.equal(receiver.seen[1].path, "/other");
  assert.equal(text(receiver.seen[1].body), "2");
});

Deno.test("H1WebhookClient.postPinned() returns a 3xx as a result and does not follow it", async () => {
  await using receiver = startReceiver((seen) =>
    seen.path === "/start"
      ? new Response(null, { status: 302, headers: { location: "/elsewhere" } })
      : new Response("followed")
  );
  await using http = client();
  const outcome = ok(
    await http.postPinned({
      url: `http://127.0.0.1:${receiver.port}/start`,
      address: LOOPBACK,
      body: "{}",
    }),
  );
  assert.equal(outcome.status, 302);
  assert.equal(outcome.headers.location, "/elsewhere");
  assert.deepEqual(receiver.seen.map((s) => s.path), ["/start"]);
});

Deno.test("H1WebhookClient.postPinned() returns 429 with its Retry-After; retryAfterMs() reads both forms", async () => {
  await using receiver = startReceiver(() =>
    new Response("slow down", { status: 429, headers: { "retry-after": "120" } })
  );
  await using http = client();
  const outcome = ok(
    await http.postPinned({
      url: `http://127.0.0.1:${receiver.port}/`,
      address: LOOPBACK,
      body: "",
    }),
  );
  assert.equal(outcome.status, 429);
  assert.equal(outcome.headers["retry-after"], "120");
  assert.equal(retryAfterMs(outcome.headers["retry-after"], 0), 120_000);
  const now = Date.parse("2026-01-01T00:00:00Z");
  assert.equal(retryAfterMs("Thu, 01 Jan 2026 00:00:30 GMT", now), 30_000);
  assert.equal(retryAfterMs("Wed, 31 Dec 2025 00:00:00 GMT", now), 0);
  assert.equal(retryAfterMs("soon", now), undefined);
  assert.equal(retryAfterMs(undefined, now), undefined);
});

Deno.test("H1WebhookClient.postPinned() fails with 'timeout' when the receiver hangs past totalTimeoutMs", async () => {
  await using receiver = startReceiver(async (_seen, hold) => {
    await hold();
    return new Response("too late");
  });
  await using http = client({ totalTimeoutMs: 300 });
  const started = performance.now();
  const outcome = await http.postPinned({
    url: `http://127.0.0.1:${receiver.port}/`,
    address: LOOPBACK,
    body: "{}",
  });
  const elapsed = performance.now() - started;
  assert.ok(!outcome.ok);
  assert.equal(outcome.error.code, "timeout");
  assert.match(
    outcome.error.message,
    /^Cannot POST to http:\/\/127\.0\.0\.1:\d+ via 127\.0\.0\.1: /,
  );
  assert.ok(elapsed >= 290 && elapsed < 2_000, `took ${elapsed} ms`);
  // A request may shorten the client's deadline (10 s here: far from 50 ms on a busy machine).
  await using patient = client({ totalTimeoutMs: 10_000 });
  const short = await patient.postPinned({
    url: `http://127.0.0.1:${receiver.port}/`,
    address: LOOPBACK,
    body: "{}",
    totalTimeoutMs: 50,
  });
  assert.ok(!short.ok);
  assert.equal(short.error.code, "timeout");
  assert.ok(short.latencyMs < 2_000, `took ${short.latencyMs} ms`);
});

Deno.test("H1WebhookClient.postPinned() keeps the first bytes of a big body and drops the connection past responseBytesMax", async () => {
  const big = new Uint8Array(1024 * 1024).map((_, i) => i % 251);
  await using receiver = startReceiver((seen) =>
    new Response(seen.path === "/big" ? big : big.subarray(0, 10_000))
  );
  await using http = client({ bodyPrefixBytes: 1024, responseBytesMax: 64 * 1024 });
  const url = (path: string) => `http://127.0.0.1:${receiver.port}${path}`;
  const capped = ok(await http.postPinned({ url: url("/big"), address: LOOPBACK, body: "" }));
  assert.deepEqual(capped.bodyPrefix, big.subarray(0, 1024));
  assert.equal(capped.bodyFullyRead, false);
  assert.ok(capped.bodyBytesRead > 64 * 1024 && capped.bodyBytesRead < big.length);
  // Under the cap the rest is drained, so the connection goes back to the pool.
  const drained = ok(await http.postPinned({ url: url("/small"), address: LOOPBACK, body: "" }));
  assert.equal(drained.bodyFullyRead, true);
  assert.equal(drained.bodyBytesRead, 10_000);
  assert.deepEqual(drained.bodyPrefix, big.subarray(0, 1024));
  assert.equal(drained.connectionReused, false, "the capped connection was not reused");
  const reused = ok(await http.postPinned({ url: url("/small"), address: LOOPBACK, body: "" }));
  assert.equal(reused.connectionReused, true);
  const [cappedPort, ...later] = receiver.seen.map((seen) => seen.remotePort);
  assert.equal(later.length, 2);
  assert.ok(!later.includes(cappedPort), "the capped connection carried nothing more");
  assert.equal(later[1], later[0]);
});

Deno.test("H1WebhookClient.postPinned() ends with 'aborted' when the signal fires, before or during the request", async () => {
  const arrived = Promise.withResolvers<void>();
  await using receiver = startReceiver(async (_seen, hold) => {
    arrived.resolve();
    await hold();
    return new Response("late");
  });
  await using http = client();
  const url = `http://127.0.0.1:${receiver.port}/`;
  const controller = new AbortController();
  const pending = http.postPinned({
    url,
    address: LOOPBACK,
    body: "{}",
    signal: controller.signal,
  });
  await arrived.promise;
  controller.abort();
  const outcome = await pending;
  assert.ok(!outcome.ok);
  assert.equal(outcome.error.code, "aborted");

  const early = await http.postPinned({
    url,
    address: LOOPBACK,
    body: "",
    signal: controller.signal,
  });
  assert.ok(!early.ok);
  assert.equal(early.error.code, "aborted");
  assert.equal(receiver.seen.length, 1);
});

Deno.test("H1WebhookClient.close() aborts requests in flight and refuses later ones", async () => {
  const arrived = Promise.withResolvers<void>();
  await using receiver = startReceiver(async (_seen, hold) => {
    arrived.resolve();
    await hold();
    return new Response("late");
  });
  const http = client();
  const url = `http://127.0.0.1:${receiver.port}/`;
  const pending = http.postPinned({ url, address: LOOPBACK, body: "{}" });
  await arrived.promise;
  await http.close();
  const outcome = await pending;
  assert.ok(!outcome.ok);
  assert.equal(outcome.error.code, "aborted");
  const after = await http.postPinned({ url, address: LOOPBACK, body: "{}" });
  assert.ok(!after.ok);
  assert.equal(after.error.code, "aborted");
});

Deno.test("H1WebhookClient.postPinned() fails with 'connect' when nothing listens", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = listener.addr.port;
  listener.close();
  await using http = client();
  const outcome = await http.postPinned({
    url: `http://127.0.0.1:${port}/`,
    address: LOOPBACK,
    body: "",
  });
  assert.ok(!outcome.ok);
  assert.equal(outcome.error.code, "connect");
});

Deno.test({
  name:
    "H1WebhookClient.postPinned() fails with 'connect-timeout' when the handshake does not complete",
  // The refused SYN of the timed-out connect is retried by the kernel after we give up;
  // its op ends only when the listener closes, after the test body.
  sanitizeOps: false,
  async fn() {
    // A listener that never accepts: once its backlog is full the kernel drops new SYNs,
    // so a connect hangs, on loopback, without touching any other address.
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = listener.addr.port;
    const queued: Deno.Conn[] = [];
    try {
      for (;;) {
        assert.ok(queued.length < 10_000, "backlog never filled");
        const connecting = Deno.connect({ hostname: "127.0.0.1", port });
        const timer = Promise.withResolvers<"hung">();
        const id = setTimeout(() => timer.resolve("hung"), 200);
        const conn = await Promise.race([connecting, timer.promise]);
        clearTimeout(id);
        if (conn === "hung") {
          connecting.then((c) => c.close(), () => {});
          break;
        }
        queued.push(conn);
      }
      await using http = client({ connectTimeoutMs: 150 });
      const outcome = await http.postPinned({
        url: `http://127.0.0.1:${port}/`,
        address: LOOPBACK,
        body: "",
      });
      assert.ok(!outcome.ok);
      assert.equal(outcome.error.code, "connect-timeout");
      assert.ok(outcome.latencyMs >= 140 && outcome.latencyMs < 2_000, `${outcome.latencyMs} ms`);
    } finally {
      for (const conn of queued) conn.close();
      listener.close();
    }
  },
});

Deno.test("H1WebhookClient.postPinned() speaks TLS to the vetted address with the URL's name for SNI and the certificate", async () => {
  await using receiver = startReceiver(() => new Response("secure"), {
    cert: TEST_CERT,
    key: TEST_KEY,
  });
  await using http = client({ caCerts: [TEST_CERT] });
  const outcome = ok(
    await http.postPinned({
      url: `https://receiver.test:${receiver.port}/hook`,
      address: LOOPBACK,
      body: "{}",
    }),
  );
  assert.equal(outcome.status, 200);
  assert.equal(text(outcome.bodyPrefix), "secure");
  assert.equal(receiver.seen[0].headers.get("host"), `receiver.test:${receiver.port}`);
  // The same address under a name the certificate does not carry is refused by TLS.
  const wrongName = await http.postPinned({
    url: `https://127.0.0.1:${receiver.port}/hook`,
    address: LOOPBACK,
    body: "{}",
  });
  assert.ok(!wrongName.ok);
  assert.equal(wrongName.error.code, "tls");
  assert.equal(receiver.seen.length, 1);
});

Deno.test("H1WebhookClient.postPinned() ignores HTTP_PROXY and friends from the environment", async () => {
  await using proxy = startReceiver(() => new Response("via proxy"));
  await using origin = startReceiver(() => new Response("direct"));
  // In a child process: the environment is process-wide, and fetch in tests running beside
  // this one would follow these variables too.
  const proxyUrl = `http://127.0.0.1:${proxy.port}`;
  const script = `
    import { H1WebhookClient } from ${JSON.stringify(import.meta.resolve("./h1_delivery.ts"))};
    import { createEgressPolicy } from ${JSON.stringify(import.meta.resolve("./ssrf.ts"))};
    const client = new H1WebhookClient({
      policy: createEgressPolicy({ allowHosts: ["127.0.0.1/32"] }),
    });
    const outcome = await client.postPinned({
      url: "http://127.0.0.1:${origin.port}/",
      address: { address: "127.0.0.1", family: 4 },
      body: "",
    });
    await client.close();
    console.log(outcome.ok ? new TextDecoder().decode(outcome.bodyPrefix) : outcome.error.code);
  `;
  const names = ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY"];
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["eval", script],
    cwd: new URL("../..", import.meta.url),
    env: Object.fromEntries(names.map((name) => [name, proxyUrl])),
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(code, 0, text(stderr));
  assert.equal(text(stdout).trim(), "direct");
  assert.equal(proxy.seen.length, 0);
  assert.equal(origin.seen.length, 1);
});

Deno.test("H1WebhookClient.postPinned() re-checks URL and address against the policy before connecting", async () => {
  await using receiver = startReceiver(() => new Response("ok"));
  await using http = new H1WebhookClient({ policy: createEgressPolicy() });
  const url = `https://example.com:${receiver.port}/`;
  const port = await http.postPinned({ url, address: LOOPBACK, body: "" });
  assert.ok(!port.ok);
  assert.equal(port.error.code, "refused-url");
  const address = await http.postPinned({
    url: "https://example.com/",
    address: LOOPBACK,
    body: "",
  });
  assert.ok(!address.ok);
  assert.equal(address.error.code, "refused-address");
  assert.match(address.error.message, /127\.0\.0\.0\/8 \(loopback\)/);
  assert.equal(receiver.seen.length, 0);
});

/** A raw TCP receiver: `answer` gets each request's head and writes whatever bytes it likes. */
async function rawReceiver(answer: (socket: net.Socket, head: string, n: number) => void) {
  const sockets = new Set<net.Socket>();
  let n = 0;
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    let buf = "";
    socket.on("data", (chunk) => {
      buf += chunk.toString("latin1");
      for (;;) {
        const end = buf.indexOf("\r\n\r\n");
        if (end < 0) return;
        const head = buf.slice(0, end);
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (buf.length < end + 4 + length) return;
        buf = buf.slice(end + 4 + length);
        answer(socket, head, n++);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    async [Symbol.asyncDispose]() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

Deno.test("H1WebhookClient (raw server): postPinned() reads chunked, close-delimited and 1xx-preceded responses", async () => {
  await using receiver = await rawReceiver((socket, head) => {
    const path = head.split(" ")[1];
    if (path === "/chunked") {
      // Split across writes mid-line, with an extension and a trailer.
      socket.write(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nRetry-After: 7\r\n\r\n5;x=1\r",
      );
      setTimeout(() => socket.write("\nhello\r\n6\r\n world\r\n0\r\nx-trailer: 1\r\n\r\n"), 5);
    } else if (path === "/early") {
      socket.write("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\n");
      socket.write("Content-Length: 2\r\n\r\nok");
    } else {
      socket.end("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil close");
    }
  });
  await using http = client();
  const url = (path: string) => `http://127.0.0.1:${receiver.port}${path}`;
  const chunked = ok(await http.postPinned({ url: url("/chunked"), address: LOOPBACK, body: "" }));
  assert.equal(text(chunked.bodyPrefix), "hello world");
  assert.equal(chunked.bodyBytesRead, 11);
  assert.equal(chunked.headers["retry-after"], "7");
  const early = ok(await http.postPinned({ url: url("/early"), address: LOOPBACK, body: "" }));
  assert.equal(early.status, 201);
  assert.equal(text(early.bodyPrefix), "ok");
  assert.equal(early.connectionReused, true, "the chunked response left the connection usable");
  const closed = ok(await http.postPinned({ url: url("/close"), address: LOOPBACK, body: "" }));
  assert.equal(text(closed.bodyPrefix), "until close");
  assert.equal(closed.bodyFullyRead, true);
  const after = ok(await http.postPinned({ url: url("/early"), address: LOOPBACK, body: "" }));
  assert.equal(after.connectionReused, false, "a close-delimited body ends its connection");
});

Deno.test("H1WebhookClient (raw server): postPinned() fails with 'network' on malformed answers and never reuses their connection", async () => {
  const answers: Record<string, string> = {
    "/status": "HTTP/1.1 abc OK\r\n\r\n",
    "/version": "HTTP/2 200\r\n\r\n",
    "/header": "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
    "/length": "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
    "/encoding": "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
    "/chunk": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    "/chunk-end": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokXY0\r\n\r\n",
    "/chunked-twice": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n",
    "/switch": "HTTP/1.1 101 Switching Protocols\r\n\r\n",
    "/big-head": `HTTP/1.1 200 OK\r\nX-Pad: ${"a".repeat(2048)}\r\n\r\n`,
  };
  await using receiver = await rawReceiver((socket, head) => {
    socket.write(answers[head.split(" ")[1]] ?? "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
  });
  await using http = client({ responseHeaderBytesMax: 1024 });
  for (const path of Object.keys(answers)) {
    const outcome = await http.postPinned({
      url: `http://127.0.0.1:${receiver.port}${path}`,
      address: LOOPBACK,
      body: "",
    });
    assert.ok(!outcome.ok, `${path} was accepted`);
    assert.equal(outcome.error.code, "network", path);
    assert.match(outcome.error.message, /malformed response/, path);
  }
  const fine = ok(
    await http.postPinned({
      url: `http://127.0.0.1:${receiver.port}/`,
      address: LOOPBACK,
      body: "",
    }),
  );
  assert.equal(fine.connectionReused, false);
});

Deno.test("H1WebhookClient (raw server): postPinned() drops a connection that says close, sends extra bytes, or is closed while idle", async () => {
  await using receiver = await rawReceiver((socket, head, n) => {
    const path = head.split(" ")[1];
    if (path === "/close") {
      socket.write("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
    } else if (path === "/extra") {
      socket.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n\r\n");
    } else if (path === "/hangup") {
      socket.write("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
      setTimeout(() => socket.end(), 10);
    } else socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${String(n).length}\r\n\r\n${n}`);
  });
  await using http = client();
  const url = (path: string) => `http://127.0.0.1:${receiver.port}${path}`;
  const post = (path: string) => http.postPinned({ url: url(path), address: LOOPBACK, body: "x" });
  for (const path of ["/close", "/extra", "/hangup"]) {
    ok(await post(path));
    if (path === "/hangup") await new Promise((resolve) => setTimeout(resolve, 100));
    const next = ok(await post("/"));
    assert.equal(next.connectionReused, false, `reused the connection after ${path}`);
  }
});

Deno.test("H1WebhookClient (raw server): postPinned() queues past connectionsPerAddressMax and serves the queue in order", async () => {
  const held: net.Socket[] = [];
  await using receiver = await rawReceiver((socket, head) => {
    const reply = () => socket.write("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    if (head.split(" ")[1] === "/slow") {
      held.push(socket);
      setTimeout(reply, 30);
    } else reply();
  });
  await using http = client({ connectionsPerAddressMax: 2 });
  const url = `http://127.0.0.1:${receiver.port}/slow`;
  const outcomes = await Promise.all(
    Array.from({ length: 6 }, () => http.postPinned({ url, address: LOOPBACK, body: "" })),
  );
  for (const outcome of outcomes) ok(outcome);
  assert.equal(new Set(held).size, 2, "two connections carried six requests");
  assert.equal(outcomes.filter((o) => o.ok && o.connectionReused).length, 4);
  // A header we cannot send as is (CR/LF) is refused before any byte leaves.
  const bad = await http.postPinned({
    url,
    address: LOOPBACK,
    body: "",
    headers: { "x-bad": "a\r\nInjected: 1" },
  });
  assert.ok(!bad.ok);
  assert.equal(bad.error.code, "network");
  assert.equal(held.length, 6);
});

Deno.test("H1WebhookClient (raw server): a pool evicted past targetsCachedMax still serves the requests it queued", async () => {
  await using receiver = await rawReceiver((socket) => {
    setTimeout(() => socket.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"), 100);
  });
  await using other = await rawReceiver((socket) => {
    socket.write("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
  });
  await using http = client({ connectionsPerAddressMax: 1, targetsCachedMax: 1 });
  const url = `http://127.0.0.1:${receiver.port}/`;
  const first = http.postPinned({ url, address: LOOPBACK, body: "1" });
  const queued = http.postPinned({ url, address: LOOPBACK, body: "2" });
  // Another origin evicts the first pool while one request is in flight and one queued.
  ok(
    await http.postPinned({ url: `http://127.0.0.1:${other.port}/`, address: LOOPBACK, body: "" }),
  );
  const started = performance.now();
  const [a, b] = [ok(await first), ok(await queued)];
  assert.equal(text(a.bodyPrefix), "ok");
  assert.equal(text(b.bodyPrefix), "ok");
  assert.ok(performance.now() - started < 1_000, "the queued request waited for a timeout");
});

Deno.test("H1WebhookClient (raw server): postPinned() keeps framing within the limits: 204 with chunked, bare LF heads, trailers and extensions past responseBytesMax", async () => {
  await using receiver = await rawReceiver((socket, head) => {
    const path = head.split(" ")[1];
    if (path === "/204") {
      socket.write("HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n");
    } else if (path === "/lf") {
      socket.write("HTTP/1.1 200 OK\nContent-Length: 2\n\nok");
    } else if (path === "/trailers") {
      socket.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n");
      for (let i = 0; i < 100; i++) socket.write(`x-t${i}: ${"t".repeat(100)}\r\n`);
      socket.write("\r\n");
    } else if (path === "/extensions") {
      socket.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
      for (let i = 0; i < 100; i++) socket.write(`1;e=${"e".repeat(100)}\r\na\r\n`);
      socket.write("0\r\n\r\n");
    } else if (path === "/both") {
      socket.write(
        "HTTP/1.1 200 OK\r\nContent-Length: 50\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
      );
    } else socket.write("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
  });
  await using http = client({ responseBytesMax: 1024, totalTimeoutMs: 2_000 });
  const post = (path: string) =>
    http.postPinned({
      url: `http://127.0.0.1:${receiver.port}${path}`,
      address: LOOPBACK,
      body: "",
    });
  const noContent = ok(await post("/204"));
  assert.equal(noContent.status, 204);
  assert.equal(noContent.bodyBytesRead, 0);
  assert.equal(text(ok(await post("/lf")).bodyPrefix), "ok");
  for (const path of ["/trailers", "/extensions"]) {
    const capped = ok(await post(path));
    assert.equal(capped.bodyFullyRead, false, `${path} read past responseBytesMax`);
    assert.ok(capped.latencyMs < 1_000, `${path} ended only at the deadline`);
  }
  // Content-Length beside chunked: read as chunked, and the connection is not kept.
  const both = ok(await post("/both"));
  assert.equal(text(both.bodyPrefix), "ok");
  assert.equal(ok(await post("/")).connectionReused, false);
});

Deno.test("H1WebhookClient (raw server): postPinned() repeats a request once on a new connection when a reused one closes unanswered", async () => {
  const perSocket = new Map<net.Socket, number>();
  let hangUps = 0;
  await using receiver = await rawReceiver((socket, head) => {
    const n = (perSocket.get(socket) ?? 0) + 1;
    perSocket.set(socket, n);
    // Like a server whose keep-alive timeout fired as the request arrived: no answer.
    if (n === 2 && head.includes("/stale")) {
      hangUps++;
      return void socket.destroy();
    }
    socket.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  });
  await using http = client();
  const url = (path: string) => `http://127.0.0.1:${receiver.port}${path}`;
  ok(await http.postPinned({ url: url("/"), address: LOOPBACK, body: "1" }));
  const repeated = ok(await http.postPinned({ url: url("/stale"), address: LOOPBACK, body: "2" }));
  assert.equal(hangUps, 1);
  assert.equal(repeated.connectionReused, false, "answered on a new connection");
  assert.equal(text(repeated.bodyPrefix), "ok");
  assert.equal(perSocket.size, 2);
  // A new connection that closes unanswered is a failure, not repeated.
  await using silent = await rawReceiver((socket) => void socket.destroy());
  const failed = await http.postPinned({
    url: `http://127.0.0.1:${silent.port}/`,
    address: LOOPBACK,
    body: "",
  });
  assert.ok(!failed.ok);
  assert.equal(failed.error.code, "network");
});

// The cases against raw node:net servers use no Deno API, so they run on Bun as well (the
// broker's own client there); the Deno.serve receivers above are Deno's.
Deno.test({
  name: "H1WebhookClient: the raw-server cases pass on Bun too",
  ignore: "Bun" in globalThis,
  async fn() {
    const file = "./runtime/webhook/h1_delivery_test.ts";
    const child = spawn(
      runtimeBinary("bun"),
      ["test", "--timeout", "20000", "--test-name-pattern", "\\(raw server\\)", file],
      { cwd: REPO_ROOT, env: { ...process.env, NO_COLOR: "1" }, stdio: ["ignore", "pipe", "pipe"] },
    );
    await using run = new ChildRun(child, "bun test h1_delivery_test.ts (raw server)");
    const exit = await run.exited;
    const output = [...run.lines, ...run.stderr.join("").split("\n")].join("\n");
    const passed = [...output.matchAll(/^\(pass\) H1WebhookClient \(raw server\)/gm)].length;
    assert.equal(exit.code, 0, output);
    assert.equal(passed, 7, output);
    assert.doesNotMatch(output, /^\(fail\)/m, output);
  },
});
