// Bad input against a real broker process: each request gets its exact status and
// problem `type`, and nothing is stored (the CommitLog does not grow).
import assert from "node:assert/strict";
import { connect } from "node:net";
import { startBroker } from "./harness/broker.ts";
import { RUNTIMES } from "./harness/process.ts";

const KEY = "test-admin-key-0123456789";
const SUB = "test-subscriber-key-0123456789";

interface Case {
  name: string;
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  token?: string | null;
  status: number;
  type: string;
}

const big = (n: number) => new Uint8Array(n);

const cases: Case[] = [
  {
    name: "oversize body",
    method: "POST",
    path: "/v1/topics/T/messages",
    body: big(4096 + 1),
    status: 413,
    type: "/problems/payload-too-large",
  },
  {
    name: "oversize declared Content-Length",
    method: "POST",
    path: "/v1/topics/T/messages",
    body: "x",
    headers: { "x-lie": "1" },
    status: 413,
    type: "/problems/payload-too-large",
  },
  {
    name: "malformed JSON batch",
    method: "POST",
    path: "/v1/topics/T/messages/batch",
    body: "{not json",
    status: 400,
    type: "/problems/invalid-json",
  },
  {
    name: "batch without messages",
    method: "POST",
    path: "/v1/topics/T/messages/batch",
    body: "{}",
    status: 400,
    type: "/problems/invalid-parameter",
  },
  {
    name: "batch with unknown field",
    method: "POST",
    path: "/v1/topics/T/messages/batch",
    body: '{"messages":[],"x":1}',
    status: 400,
    type: "/problems/invalid-parameter",
  },
  {
    name: "too many batch items",
    method: "POST",
    path: "/v1/topics/T/messages/batch",
    body: JSON.stringify({ messages: Array(11).fill({ body: "a" }) }),
    status: 413,
    type: "/problems/too-many-batch-items",
  },
  {
    name: "empty batch",
    method: "POST",
    path: "/v1/topics/T/messages/batch",
    body: '{"messages":[]}',
    status: 413,
    type: "/problems/too-many-batch-items",
  },
  {
    name: "batch whose every item is bad",
    method: "POST",
    path: "/v1/topics/T/messages/batch",
    body: '{"messages":[{"body":1}]}',
    status: 400,
    type: "",
  },
  {
    name: "topic with a slash",
    method: "POST",
    path: "/v1/topics/a%2Fb/messages",
    body: "x",
    status: 400,
    type: "/problems/invalid-name",
  },
  {
    name: "topic too long",
    method: "POST",
    path: `/v1/topics/${"t".repeat(128)}/messages`,
    body: "x",
    status: 400,
    type: "/problems/invalid-name",
  },
  {
    name: "topic with dots",
    method: "POST",
    path: "/v1/topics/..%2F..%2Fetc/messages",
    body: "x",
    status: 400,
    type: "/problems/invalid-name",
  },
  {
    name: "reserved topic prefix",
    method: "POST",
    path: "/v1/topics/%25RETRY%25g/messages",
    body: "x",
    status: 403,
    type: "/problems/system-topic",
  },
  {
    name: "system topic",
    method: "POST",
    path: "/v1/topics/SCHEDULE_TOPIC_XXXX/messages",
    body: "x",
    status: 403,
    type: "/problems/system-topic",
  },
  {
    name: "negative offset",
    path: "/v1/topics/T/queues/0/messages?offset=-1",
    status: 400,
    type: "/problems/invalid-parameter",
  },
  {
    name: "offset beyond the queue",
    path: "/v1/topics/T/queues/0/messages?offset=99999",
    status: 416,
    type: "/problems/offset-out-of-range",
  },
  {
    name: "huge offset",
    path: "/v1/topics/T/queues/0/messages?offset=99999999999999999999",
    status: 400,
    type: "/problems/invalid-parameter",
  },
  {
    name: "offset not a number",
    path: "/v1/topics/T/queues/0/messages?offset=12abc",
    status: 400,
    type: "/problems/invalid-parameter",
  },
  {
    name: "missing offset",
    path: "/v1/topics/T/queues/0/messages",
    status: 400,
    type: "/problems/invalid-parameter",
  },
  {
    name: "waitMs beyond the cap",
    path: "/v1/topics/T/queues/0/messages?offset=0&waitMs=1000000",
    status: 400,
    type: "/problems/invalid-parameter",
  },
  {
    name: "max=0",
    path: "/v1/topics/T/queues/0/messages?offset=0&max=0",
    status: 400,
    type: "/problems/invalid-parameter",
  },
  {
    name: "queue that does not exist",
    path: "/v1/topics/T/queues/99/messages?offset=0",
    status: 404,
    type: "/problems/queue-not-found",
  },
  {
    name: "topic that does not exist",
    path: "/v1/topics/Nope/queues/0/messages?offset=0",
    status: 404,
    type: "/problems/topic-not-found",
  },
  {
    name: "unknown group",
    path: "/v1/groups/nobody/offsets/T",
    status: 404,
    type: "/problems/group-not-found",
  },
  {
    name: "pull with unknown group",
    path: "/v1/topics/T/queues/0/messages?offset=0&group=nobody",
    status: 404,
    type: "/problems/group-not-found",
  },
  {
    name: "missing token",
    method: "POST",
    path: "/v1/topics/T/messages",
    body: "x",
    token: null,
    status: 401,
    type: "/problems/unauthorized",
  },
  {
    name: "wrong token",
    method: "POST",
    path: "/v1/topics/T/messages",
    body: "x",
    token: "wrong-token-wrong-token",
    status: 401,
    type: "/problems/unauthorized",
  },
  {
    name: "subscriber may not publish",
    method: "POST",
    path: "/v1/topics/T/messages",
    body: "x",
    token: SUB,
    status: 403,
    type: "/problems/forbidden",
  },
  {
    name: "subscriber may not delete topics",
    method: "DELETE",
    path: "/v1/topics/T",
    token: SUB,
    status: 403,
    type: "/problems/forbidden",
  },
  {
    name: "tag with ||",
    method: "POST",
    path: "/v1/topics/T/messages",
    body: "x",
    headers: { "mq-tag": "a||b" },
    status: 400,
    type: "/problems/invalid-header",
  },
  {
    name: "non-numeric queue id header",
    method: "POST",
    path: "/v1/topics/T/messages",
    body: "x",
    headers: { "mq-queue-id": "one" },
    status: 400,
    type: "/problems/invalid-parameter",
  },
  {
    name: "queue id header beyond the topic",
    method: "POST",
    path: "/v1/topics/T/messages",
    body: "x",
    headers: { "mq-queue-id": "50" },
    status: 404,
    type: "/problems/queue-not-found",
  },
  {
    name: "reserved property",
    method: "POST",
    path: "/v1/topics/T/messages",
    body: "x",
    headers: { "mq-prop-tags": "x" },
    status: 400,
    type: "/problems/invalid-property",
  },
  {
    name: "key too long",
    method: "POST",
    path: "/v1/topics/T/messages",
    body: "x",
    headers: { "mq-keys": "k".repeat(200) },
    status: 400,
    type: "/problems/invalid-header",
  },
  {
    name: "delay beyond the timer horizon",
    method: "POST",
    path: "/v1/topics/T/messages",
    body: "x",
    headers: { "mq-delay-ms": String(366 * 86_400_000) },
    status: 400,
    type: "/problems/invalid-parameter",
  },
  {
    name: "delay level beyond the table",
    method: "POST",
    path: "/v1/topics/T/messages",
    body: "x",
    headers: { "mq-delay-level": "19" },
    status: 400,
    type: "/problems/invalid-parameter",
  },
  {
    name: "two kinds of delay at once",
    method: "POST",
    path: "/v1/topics/T/messages",
    body: "x",
    headers: { "mq-delay-level": "1", "mq-delay-ms": "5" },
    status: 400,
    type: "/problems/invalid-parameter",
  },
  {
    name: "cancel an unknown scheduled message",
    method: "DELETE",
    path: "/v1/topics/T/scheduled/0123456789ABCDEF0123456789ABCDEF",
    status: 404,
    type: "/problems/message-not-found",
  },
  {
    name: "bad cron expression",
    method: "POST",
    path: "/v1/schedules",
    body: '{"topic":"T","cron":"99 * * * *","message":{"body":"x"}}',
    status: 400,
    type: "/problems/invalid-parameter",
  },
  {
    name: "bad topic settings",
    method: "PUT",
    path: "/v1/topics/T2",
    body: '{"readQueueNums": 0}',
    headers: { "content-type": "application/json" },
    status: 400,
    type: "/problems/invalid-parameter",
  },
  {
    name: "unknown topic setting",
    method: "PUT",
    path: "/v1/topics/T2",
    body: '{"colour": "red"}',
    status: 400,
    type: "/problems/invalid-parameter",
  },
  {
    name: "commit a negative offset",
    method: "PUT",
    path: "/v1/groups/g/offsets/T/0",
    body: '{"offset": -5}',
    status: 400,
    type: "/problems/invalid-parameter",
  },
  {
    name: "commit beyond the queue",
    method: "PUT",
    path: "/v1/groups/g/offsets/T/0",
    body: '{"offset": 5000}',
    status: 416,
    type: "/problems/offset-out-of-range",
  },
  {
    name: "malformed message id",
    path: "/v1/messages/not-an-id",
    status: 400,
    type: "/problems/invalid-parameter",
  },
  {
    name: "unknown message id",
    path: "/v1/messages/0123456789ABCDEF0123456789ABCDEF",
    status: 404,
    type: "/problems/message-not-found",
  },
  { name: "unknown route", path: "/v2/whatever", status: 404, type: "/problems/not-found" },
];

for (const runtime of RUNTIMES) {
  Deno.test(`broker on ${runtime}: bad input gets a typed error and changes nothing`, async (t) => {
    await using broker = await startBroker(runtime, {
      token: KEY,
      env: {
        MQ_MAX_MESSAGE_SIZE: "4096",
        MQ_BATCH_ITEMS_MAX: "10",
        MQ_BODY_READ_TIMEOUT_MS: "500",
        MQ_API_KEYS: JSON.stringify([
          { key: KEY, name: "admin", admin: true },
          { key: SUB, name: "reader", subscribe: ["T", "g"] },
        ]),
      },
    });
    await broker.client.upsertTopic("T", { readQueueNums: 2, writeQueueNums: 2 });
    await broker.client.upsertGroup("g");
    await broker.client.produce("T", { body: "seed", queueId: 0 });
    const before = (await broker.client.health()).commitLogMaxOffset;

    for (const k of cases) {
      await t.step(k.name, async () => {
        const headers: Record<string, string> = { ...k.headers };
        if (k.token !== null) headers.authorization = `Bearer ${k.token ?? KEY}`;
        let res: Response;
        if (headers["x-lie"]) {
          res = await rawRequest(
            broker.url,
            `POST ${k.path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\nContent-Length: 999999999\r\n\r\nx`,
          );
        } else {
          res = await fetch(broker.url + k.path, {
            method: k.method ?? "GET",
            headers,
            body: k.body as BodyInit,
          });
        }
        const text = await res.text();
        assert.equal(res.status, k.status, `${k.name}: ${text}`);
        if (k.type) {
          assert.equal(res.headers.get("content-type"), "application/problem+json");
          assert.equal(JSON.parse(text).type, k.type, text);
        }
      });
    }

    await t.step("a slow body gets 408 within bodyReadTimeoutMs", async () => {
      const res = await rawRequest(
        broker.url,
        `POST /v1/topics/T/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\nContent-Length: 100\r\n\r\nabc`,
      );
      assert.equal(res.status, 408);
      assert.equal(JSON.parse(await res.text()).type, "/problems/request-timeout");
    });

    const after = (await broker.client.health()).commitLogMaxOffset;
    assert.equal(after, before, "a refused request must store nothing");
  });
}

/** Sends raw bytes (for lies fetch will not tell) and parses the first response. */
function rawRequest(url: string, raw: string): Promise<Response> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(raw));
    let data = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      data += chunk;
      const end = data.indexOf("\r\n\r\n");
      if (end < 0) return;
      const head = data.slice(0, end).split("\r\n");
      const status = Number(head[0].split(" ")[1]);
      const length = Number(head.find((h) => /^content-length:/i.test(h))?.split(":")[1] ?? "0");
      const body = data.slice(end + 4);
      if (body.length < length) return;
      socket.destroy();
      const headers = new Headers();
      for (const h of head.slice(1)) {
        const i = h.indexOf(":");
        headers.set(h.slice(0, i).trim(), h.slice(i + 1).trim());
      }
      resolve(new Response(body.slice(0, length), { status, headers }));
    });
    socket.on("error", reject);
    socket.setTimeout(10_000, () => {
      socket.destroy();
      reject(new Error("raw request timed out"));
    });
  });
}
