// homeQstash (functions/qstash/remote.ts): the cluster's QStash calls go to the home group
// named per call; a refusal as not the leader drops the routes and asks again once, a read
// that could not reach the group too, a write that could not reach it does not repeat.
import assert from "node:assert/strict";
import { homeQstash } from "./remote.ts";
import type { BrokerClient, QstashApi } from "../../runtime/protocol/core_api.ts";
import { BrokerError } from "../../runtime/protocol/errors.ts";

/** Home clients in turn: each stands for a group master; `answers` says what each does. */
function setup(answers: ((call: string) => unknown)[]) {
  const clients = answers.map(() => ({}) as BrokerClient);
  const calls: string[] = [];
  let current = 0;
  let stale = 0;
  const api = (i: number): QstashApi =>
    new Proxy({} as QstashApi, {
      get: (_, name: string) => () => {
        calls.push(`${i}:${name}`);
        const v = answers[i](name);
        return v instanceof Error ? Promise.reject(v) : Promise.resolve(v);
      },
    });
  const q = homeQstash(
    () => Promise.resolve(clients[current]),
    (c) => api(clients.indexOf(c)),
    () => {
      stale++;
      current++;
    },
  );
  return { q, calls, stale: () => stale };
}

const notLeader = () => new BrokerError("NOT_LEADER", "not the master");
const unreachable = () => new BrokerError("BROKER_UNAVAILABLE", "cannot reach");

Deno.test("homeQstash: a NOT_LEADER refusal drops the routes and asks the new home once", async () => {
  const s = setup([() => notLeader(), () => ({ current: "sig_a", next: "sig_b" })]);
  assert.deepEqual(await s.q.qstashSigningKeys(), { current: "sig_a", next: "sig_b" });
  assert.deepEqual(s.calls, ["0:qstashSigningKeys", "1:qstashSigningKeys"]);
  assert.equal(s.stale(), 1);
});

Deno.test("homeQstash: an unreachable home repeats a read, never a write", async () => {
  const read = setup([() => unreachable(), () => ({ ok: true })]);
  assert.deepEqual(await read.q.qstashSettings(), { ok: true });
  const write = setup([() => unreachable(), () => 1]);
  await assert.rejects(write.q.deleteDeadLetters("g", ["id"]), /cannot reach/);
  assert.deepEqual(write.calls, ["0:deleteDeadLetters"]);
  assert.equal(write.stale(), 0);
});

Deno.test("homeQstash: other refusals pass through, asked once", async () => {
  const s = setup([() => new BrokerError("SCHEDULE_NOT_FOUND", "no such schedule"), () => ({})]);
  await assert.rejects(s.q.qstashSchedule("x"), /no such schedule/);
  assert.deepEqual(s.calls, ["0:qstashSchedule"]);
});
