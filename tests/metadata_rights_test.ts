// Metadata is read only with rights (issue #19, point 5), against a real broker on each
// runtime: a publish-only key for `orders` sees `orders`' topic and schedules, not
// `secret`'s. The whole route table × rights is functions/rights_test.ts.
import assert from "node:assert/strict";
import { MqClient } from "../client/mod.ts";
import { startBroker } from "./harness/broker.ts";
import { RUNTIMES } from "./harness/process.ts";

const ADMIN = "rights-admin-key-0123456789";
const PUB = "rights-publish-key-0123456789";

for (const runtime of RUNTIMES) {
  Deno.test(`broker on ${runtime}: topic and schedule metadata need a right on the topic`, async () => {
    await using broker = await startBroker(runtime, {
      token: ADMIN,
      env: {
        MQ_API_KEYS: JSON.stringify([
          { key: ADMIN, name: "admin", admin: true },
          { key: PUB, name: "shop", publish: ["orders"] },
        ]),
      },
    });
    const admin = broker.client;
    for (const topic of ["orders", "secret"]) await admin.upsertTopic(topic, {});
    const [mine, theirs] = await Promise.all(
      ["orders", "secret"].map((topic) =>
        admin.createSchedule({ topic, cron: "0 0 1 1 *", message: { body: "x" } })
      ),
    );
    const get = async (path: string) => {
      const res = await fetch(broker.url + path, { headers: { authorization: `Bearer ${PUB}` } });
      return { status: res.status, body: await res.json() };
    };

    const topics = await get("/v1/topics");
    assert.equal(topics.status, 200);
    assert.deepEqual(topics.body.topics.map((t: { name: string }) => t.name), ["orders"]);
    assert.equal((await get("/v1/topics/orders")).status, 200);
    const topic = await get("/v1/topics/secret");
    assert.equal(topic.status, 403);
    assert.equal(topic.body.type, "/problems/forbidden");

    const schedules = await get("/v1/schedules");
    assert.equal(schedules.status, 200);
    assert.deepEqual(schedules.body.schedules.map((s: { id: string }) => s.id), [mine.id]);
    assert.equal((await get(`/v1/schedules/${mine.id}`)).status, 200);
    const schedule = await get(`/v1/schedules/${theirs.id}`);
    assert.equal(schedule.status, 403);
    assert.equal(schedule.body.type, "/problems/forbidden");

    // The admin key still sees both.
    const all = new MqClient({ baseUrl: broker.url, token: ADMIN });
    const names = (await all.listTopics()).map((t) => t.name);
    assert.ok(names.includes("orders") && names.includes("secret"), names.join());
    assert.equal((await all.listSchedules()).length, 2);
  });
}
