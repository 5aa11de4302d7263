// What a broker group that joins a topic needs before its queues become writable
// (docs/cluster.md "Expansion, drain, removal"): each group delivers the messages of its own
// queues, so it must know the topic's consumers as the others do. From a group already in
// the topic (the template) the joining group gets, when it lacks them:
// - every consumer group (settings only: retries, consume-from, orderly). As RocketMQ's
//   `updateSubGroup -c cluster`, a group's settings are cluster-wide, not per topic; copying
//   before the first message also makes LAST_OFFSET start at the new queues' first message.
// - the topic's webhook subscriptions, with the same signing secrets (read in full with
//   revealSecrets) and startFrom "earliest": everything written to the new queues is delivered.
// - every producer group's transaction-check URL and secrets: any producer group may begin a
//   transaction on the new queues (which ones use the topic is not known beforehand).
// A group that already has one keeps its own (a re-added draining group).
import type { SubscriptionInput, SubscriptionView } from "../protocol/types.ts";
import type { GroupLink } from "./route_source.ts";

export async function copyTopicConsumers(
  template: GroupLink,
  joining: GroupLink,
  topic: string,
): Promise<void> {
  await copyConsumerGroups(template, joining);
  await copySubscriptions(template, joining, topic);
  await copyTransactionChecks(template, joining);
}

async function copyTransactionChecks(template: GroupLink, joining: GroupLink): Promise<void> {
  const have = new Set((await joining.client.listTransactionChecks()).map((c) => c.producerGroup));
  for (const check of await template.client.listTransactionChecks({ revealSecrets: true })) {
    if (have.has(check.producerGroup)) continue;
    await joining.client.setTransactionCheck(check.producerGroup, {
      url: check.url,
      secrets: check.secrets,
    });
  }
}

async function copyConsumerGroups(template: GroupLink, joining: GroupLink): Promise<void> {
  const from = template.client.listGroups;
  const to = joining.client.listGroups;
  if (from === undefined || to === undefined) return; // no ops views: forGroup copies on use
  const have = new Set((await to()).map((g) => g.group));
  for (const { group, ...settings } of await from()) {
    if (!have.has(group)) await joining.client.upsertGroup(group, settings);
  }
}

async function copySubscriptions(
  template: GroupLink,
  joining: GroupLink,
  topic: string,
): Promise<void> {
  const have = new Set(
    (await joining.client.listSubscriptions()).map((s) => s.group),
  );
  const subs = await template.client.listSubscriptions({ revealSecrets: true });
  for (const view of subs) {
    if (view.topic !== topic || have.has(view.group)) continue;
    await joining.client.upsertSubscription(view.group, inputOf(view));
    if (view.status === "paused") await joining.client.setSubscriptionPaused(view.group, true);
  }
}

function inputOf(v: SubscriptionView): SubscriptionInput {
  return {
    topic: v.topic,
    tags: v.tags,
    url: v.url,
    secrets: v.secrets,
    headers: v.headers,
    timeoutMs: v.timeoutMs,
    maxConcurrency: v.maxConcurrency,
    ratePerSec: v.ratePerSec,
    ordered: v.ordered,
    retryMaxTimes: v.retryMaxTimes,
    retryBackoffMs: v.retryBackoffMs,
    failureCallbackUrl: v.failureCallbackUrl,
    ...(v.dialect !== undefined && { dialect: v.dialect }),
    startFrom: "earliest",
  };
}
