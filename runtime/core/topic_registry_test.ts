// TopicRegistry.writable(): a registered topic skips the name checks (they ran when it was
// created), so a produce costs one lookup; names that were never checked still are.
import assert from "node:assert/strict";
import type {
  MetadataStore,
  TopicConfig as StoredTopic,
} from "../../storage/metadata/metadata_store.ts";
import { BrokerError } from "../protocol/errors.ts";
import { TopicRegistry } from "./topic_registry.ts";

const stored = (topicName: string, perm = 6): StoredTopic => ({
  topicName,
  readQueueNums: 8,
  writeQueueNums: 8,
  perm,
  order: false,
  attributes: {},
  createdAtMs: 0,
  updatedAtMs: 0,
});
const code = (c: string) => (err: unknown) => err instanceof BrokerError && err.code === c;

Deno.test("TopicRegistry.writable: registered, loaded-but-unchecked, unknown and bad names", async () => {
  const metadata = {
    listTopics: () =>
      Promise.resolve([stored("orders"), stored("rmq_sys_legacy"), stored("ro", 4)]),
    upsertTopic: (t: StoredTopic) => Promise.resolve(stored(t.topicName, t.perm)),
  } as unknown as MetadataStore;
  const registry = await TopicRegistry.load(metadata, {
    defaultTopicQueueNums: 4,
    topicQueueNumsMax: 64,
    autoCreateTopicEnable: true,
    topicsMax: 100,
  });
  assert.equal((registry.writable("orders") as { name: string }).name, "orders");
  // Loaded from metadata under a reserved prefix: still refused, as before the fast path.
  assert.throws(() => registry.writable("rmq_sys_legacy"), code("SYSTEM_TOPIC"));
  assert.throws(() => registry.writable("ro"), code("TOPIC_PERMISSION_DENIED"));
  // Not registered: the name checks run, then auto-create.
  assert.throws(() => registry.writable("TBW102"), code("SYSTEM_TOPIC"));
  assert.throws(() => registry.writable("%RETRY%g"), code("SYSTEM_TOPIC"));
  assert.throws(() => registry.writable("bad name"), (e: unknown) => e instanceof BrokerError);
  const created = await registry.writable("fresh");
  assert.equal(created.name, "fresh");
  assert.equal(registry.writable("fresh"), registry.find("fresh"));
});
