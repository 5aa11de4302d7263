// ClusterQstash with fake groups: the keys most groups hold win and go to the others; a
// group that is down does not stop a publish's destination check (it is retried when the
// keys are read); a refusal is the answer, not a reason to ask another group.
import assert from "node:assert/strict";
import type { BrokerClient, QstashApi } from "../protocol/core_api.ts";
import { BrokerError } from "../protocol/errors.ts";
import type { QstashSigningKeys } from "../protocol/qstash.ts";
import type { GroupLink } from "./route_source.ts";
import { ClusterQstash } from "./qstash_router.ts";

function fakeGroup(name: string, keys: QstashSigningKeys) {
  const state = { keys, down: false, sets: 0 };
  const fail = () => Promise.reject(new TypeError("connection refused"));
  const api = {
    qstashSigningKeys: () => state.down ? fail() : Promise.resolve(state.keys),
    setQstashSigningKeys: (k: QstashSigningKeys) => {
      if (state.down) return fail();
      state.sets++;
      state.keys = k;
      return Promise.resolve(k);
    },
    checkDestination: (url: string) =>
      state.down
        ? fail()
        : url.includes("10.0.0.1")
        ? Promise.reject(new BrokerError("WEBHOOK_URL_REFUSED", "refused"))
        : Promise.resolve(),
  } as unknown as QstashApi;
  const link = { name, url: `http://${name}`, epoch: 1, client: {} } as GroupLink;
  return { state, api, link };
}

Deno.test("ClusterQstash: majority keys, a down group does not stop publishing", async () => {
  const one = { current: "sig_one", next: "sig_one_next" };
  const two = { current: "sig_two", next: "sig_two_next" };
  const groups = [fakeGroup("a", one), fakeGroup("b", two), fakeGroup("c", two)];
  const apis = new Map<unknown, QstashApi>(groups.map((g) => [g.link.client, g.api]));
  const of = (c: BrokerClient) => apis.get(c)!;
  let live = groups.map((g) => g.link);
  const q = new ClusterQstash({ groups: () => Promise.resolve(live) }, of);

  assert.deepEqual(await q.qstashSigningKeys(), two); // b and c outvote a
  assert.deepEqual(groups.map((g) => g.state.keys), [two, two, two]);

  // A new group (first by name) registers with other keys and is unreachable for now.
  const d = fakeGroup("0-new", one);
  apis.set(d.link.client, d.api);
  d.state.down = true;
  live = [d.link, ...groups.map((g) => g.link)];
  await q.checkDestination("https://ok.example.com/"); // answered by the next group
  assert.deepEqual(await q.qstashSigningKeys(), two); // /v2/keys answers without d
  await assert.rejects(
    q.checkDestination("http://10.0.0.1/"),
    (e) => e instanceof BrokerError && e.code === "WEBHOOK_URL_REFUSED",
  );
  d.state.down = false;
  assert.deepEqual(await q.qstashSigningKeys(), two); // read again: d gets the keys
  assert.deepEqual(d.state.keys, two);
});

/** One group "a" whose master changes when the routes are dropped: each master answers as
 * `answers[i]` says. */
function failover(answers: ((call: string) => unknown)[]) {
  const calls: string[] = [];
  let current = 0;
  let invalidated = 0;
  const links = answers.map((_, i) => ({ name: "a", url: "http://a", epoch: i, client: { i } }));
  const of = (c: BrokerClient) => {
    const i = (c as unknown as { i: number }).i;
    return new Proxy({} as QstashApi, {
      get: (_, name: string) => () => {
        calls.push(`${i}:${name}`);
        const v = answers[i](name);
        return v instanceof Error ? Promise.reject(v) : Promise.resolve(v);
      },
    });
  };
  const q = new ClusterQstash({
    groups: () => Promise.resolve([links[current] as unknown as GroupLink]),
    invalidate: () => {
      invalidated++;
      current = Math.min(current + 1, links.length - 1);
    },
  }, of);
  return { q, calls, invalidated: () => invalidated };
}

const notLeader = () => new BrokerError("NOT_LEADER", "not the master");
const unreachable = () => new BrokerError("BROKER_UNAVAILABLE", "cannot reach");

Deno.test("ClusterQstash: NOT_LEADER re-reads the routes and asks the new master once", async () => {
  const s = failover([() => notLeader(), () => [{ storeTimestamp: 1 }]]);
  assert.equal((await s.q.listDeadLetters("g", 10)).length, 1);
  assert.deepEqual(s.calls, ["0:listDeadLetters", "1:listDeadLetters"]);
  assert.equal(s.invalidated(), 1);
});

Deno.test("ClusterQstash: an unreachable group repeats a read, never a write", async () => {
  const read = failover([() => unreachable(), () => ({ id: "x" })]);
  assert.deepEqual(await read.q.qstashSchedule("x"), { id: "x" });
  const write = failover([() => unreachable(), () => 1]);
  await assert.rejects(write.q.deleteDeadLetters("g", ["id"]), /cannot reach/);
  assert.deepEqual(write.calls, ["0:deleteDeadLetters"]);
  assert.equal(write.invalidated(), 0);
});

Deno.test("ClusterQstash: other refusals pass through, asked once", async () => {
  const s = failover([() => new BrokerError("WEBHOOK_URL_REFUSED", "refused"), () => ({})]);
  await assert.rejects(s.q.retryDeadLetters("g", ["x"]), /refused/);
  assert.deepEqual(s.calls, ["0:retryDeadLetters"]);
});
