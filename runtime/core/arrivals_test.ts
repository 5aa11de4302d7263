import assert from "node:assert/strict";
import type { MessageStore } from "../../storage/message_store.ts";
import { ArrivalRouter } from "./arrivals.ts";

type Listener = (topic: string, queueId: number, maxOffset: number) => void;

function fakeStore() {
  const ref: { listener?: Listener } = {};
  const store = { onArrival: (l: Listener) => (ref.listener = l) } as unknown as MessageStore;
  return { store, arrive: (t: string, q: number, o: number) => ref.listener!(t, q, o) };
}

Deno.test("ArrivalRouter sends a system topic's arrivals to its owner alone, the rest to every client listener", () => {
  const { store, arrive } = fakeStore();
  const router = new ArrivalRouter(store);
  const heard: string[] = [];
  router.registerSystemTopic(
    "SCHEDULE_TOPIC_XXXX",
    (t, q, o) => heard.push(`schedule ${t}:${q}@${o}`),
  );
  router.registerClientTopics((t, q, o) => heard.push(`holds ${t}:${q}@${o}`));
  router.registerClientTopics((t, q) => heard.push(`webhooks ${t}:${q}`));
  arrive("SCHEDULE_TOPIC_XXXX", 2, 7);
  arrive("orders", 1, 3);
  assert.deepEqual(heard, [
    "schedule SCHEDULE_TOPIC_XXXX:2@7",
    "holds orders:1@3",
    "webhooks orders:1",
  ]);
  assert.throws(() => router.registerSystemTopic("SCHEDULE_TOPIC_XXXX", () => {}), /already/);
});
