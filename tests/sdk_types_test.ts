// The SDK (client/) owns its copy of the wire types so it can be published alone; this
// file keeps the copy honest. Each pair must be mutually assignable and the error codes
// equal, so a field added, removed or retyped on either side fails `deno check` (and so
// this test). It also checks that MqClient still is a BrokerClient (split-mode functions
// use it as one) and that client/ imports nothing outside itself.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import type * as Sdk from "../client/mod.ts";
import { MqClient, PROBLEM_CODES } from "../client/mod.ts";
import type * as Broker from "../runtime/protocol/types.ts";
import type * as Cluster from "../runtime/protocol/cluster_types.ts";
import { type ProblemCode, PROBLEMS } from "../runtime/protocol/errors.ts";
import type { BrokerClient, TransactionApi } from "../runtime/protocol/core_api.ts";
import type * as SdkTx from "../client/transactions.ts";
import { TransactionClient } from "../client/transactions.ts";
import type * as BrokerTx from "../runtime/protocol/transaction_types.ts";

/** true when A and B are assignable to each other and have the same members (an optional
 * field on one side only is assignable both ways, so plain assignability would miss it);
 * otherwise false, and the line fails. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? Identical<A, B> : false) : false;
type Identical<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true
  : false;

export const wireTypesMatch: {
  Durability: Same<Sdk.Durability, Broker.Durability>;
  ProduceMessage: Same<Sdk.ProduceMessage, Broker.ProduceMessage>;
  ProduceResult: Same<Sdk.ProduceResult, Broker.ProduceResult>;
  BatchItemResult: Same<Sdk.BatchItemResult, Broker.BatchItemResult>;
  WireMessage: Same<Sdk.WireMessage, Broker.WireMessage>;
  PullRequest: Same<Sdk.PullRequest, Broker.PullRequest>;
  PullResult: Same<Sdk.PullResult, Broker.PullResult>;
  Perm: Same<Sdk.Perm, Broker.Perm>;
  TopicConfig: Same<Sdk.TopicConfig, Broker.TopicConfig>;
  TopicUpsert: Same<Sdk.TopicUpsert, Broker.TopicUpsert>;
  TopicRouteView: Same<Sdk.TopicRouteView, Cluster.TopicRouteView>;
  QueueOffsetInfo: Same<Sdk.QueueOffsetInfo, Broker.QueueOffsetInfo>;
  GroupOffsets: Same<Sdk.GroupOffsets, Broker.GroupOffsets>;
  FindQuery: Same<Sdk.FindQuery, Broker.FindQuery>;
  HealthInfo: Same<Sdk.HealthInfo, Broker.HealthInfo>;
  ScheduledStats: Same<Sdk.ScheduledStats, Broker.ScheduledStats>;
  SubscriptionInput: Same<Sdk.SubscriptionInput, Broker.SubscriptionInput>;
  SubscriptionStatus: Same<Sdk.SubscriptionStatus, Broker.SubscriptionStatus>;
  SubscriptionStats: Same<Sdk.SubscriptionStats, Broker.SubscriptionStats>;
  SubscriptionView: Same<Sdk.SubscriptionView, Broker.SubscriptionView>;
  DeliveryOutcome: Same<Sdk.DeliveryOutcome, Broker.DeliveryOutcome>;
  DeliveryAttempt: Same<Sdk.DeliveryAttempt, Broker.DeliveryAttempt>;
  SignalSource: Same<Sdk.SignalSource, Broker.SignalSource>;
  CronScheduleInput: Same<Sdk.CronScheduleInput, Broker.CronScheduleInput>;
  CronScheduleView: Same<Sdk.CronScheduleView, Broker.CronScheduleView>;
  ScheduledOutcome: Same<Sdk.ScheduledOutcome, Broker.ScheduledOutcome>;
  PopMessage: Same<Sdk.PopMessage, Broker.PopMessage>;
  ReceiveOptions: Same<Sdk.ReceiveOptions, Broker.ReceiveOptions>;
  GroupSettings: Same<Sdk.GroupSettings, Broker.GroupSettings>;
  GroupView: Same<Sdk.GroupView, Broker.GroupView>;
  MembersView: Same<Sdk.MembersView, Broker.MembersView>;
  AssignmentView: Same<Sdk.AssignmentView, Broker.AssignmentView>;
  AssignmentOptions: Same<Sdk.AssignmentOptions, Cluster.AssignmentOptions>;
  HeartbeatRequest: Same<Sdk.HeartbeatRequest, Broker.HeartbeatRequest>;
  AckResult: Same<Sdk.AckResult, Broker.AckResult>;
  ProblemCode: Same<Sdk.ProblemCode, ProblemCode>;
  TransactionState: Same<SdkTx.TransactionState, BrokerTx.TransactionState>;
  TransactionDecision: Same<SdkTx.TransactionDecision, BrokerTx.TransactionDecision>;
  TransactionCheckAnswer: Same<SdkTx.TransactionCheckAnswer, BrokerTx.TransactionCheckAnswer>;
  TransactionBegun: Same<SdkTx.TransactionBegun, BrokerTx.TransactionBegun>;
  TransactionView: Same<SdkTx.TransactionView, BrokerTx.TransactionView>;
  TransactionCheck: Same<SdkTx.TransactionCheck, BrokerTx.TransactionCheck>;
  TransactionCheckInput: Same<SdkTx.TransactionCheckInput, BrokerTx.TransactionCheckInput>;
  TransactionCheckView: Same<SdkTx.TransactionCheckView, BrokerTx.TransactionCheckView>;
  TransactionPollOptions: Same<SdkTx.TransactionPollOptions, BrokerTx.TransactionPollOptions>;
} = {
  Durability: true,
  ProduceMessage: true,
  ProduceResult: true,
  BatchItemResult: true,
  WireMessage: true,
  PullRequest: true,
  PullResult: true,
  Perm: true,
  TopicConfig: true,
  TopicUpsert: true,
  TopicRouteView: true,
  QueueOffsetInfo: true,
  GroupOffsets: true,
  FindQuery: true,
  HealthInfo: true,
  ScheduledStats: true,
  SubscriptionInput: true,
  SubscriptionStatus: true,
  SubscriptionStats: true,
  SubscriptionView: true,
  DeliveryOutcome: true,
  DeliveryAttempt: true,
  SignalSource: true,
  CronScheduleInput: true,
  CronScheduleView: true,
  ScheduledOutcome: true,
  PopMessage: true,
  ReceiveOptions: true,
  GroupSettings: true,
  GroupView: true,
  MembersView: true,
  AssignmentView: true,
  AssignmentOptions: true,
  HeartbeatRequest: true,
  AckResult: true,
  ProblemCode: true,
  TransactionState: true,
  TransactionDecision: true,
  TransactionCheckAnswer: true,
  TransactionBegun: true,
  TransactionView: true,
  TransactionCheck: true,
  TransactionCheckInput: true,
  TransactionCheckView: true,
  TransactionPollOptions: true,
};

/** MqClient satisfies the core API by shape (its produce also takes text bodies). */
export const asBrokerClient = (c: MqClient): BrokerClient => c;

/** TransactionClient satisfies the core's TransactionApi by shape (split-mode functions join
 * it to MqClient with withTransactions). */
export const asTransactionApi = (c: TransactionClient): TransactionApi => c;

Deno.test("the SDK's error codes are the broker's, in the same order", () => {
  assert.deepEqual([...PROBLEM_CODES], Object.keys(PROBLEMS));
});

Deno.test("client/ imports nothing outside itself, and no node: module", () => {
  const dir = new URL("../client/", import.meta.url);
  const bad: string[] = [];
  for (const name of readdirSync(dir)) {
    if (!name.endsWith(".ts") || name.endsWith("_test.ts") || name.endsWith(".d.ts")) continue;
    const text = readFileSync(new URL(name, dir), "utf8");
    for (const m of text.matchAll(/(?:from|import)\s*\(?\s*"([^"]+)"/g)) {
      if (!m[1].startsWith("./")) bad.push(`${name} -> ${m[1]}`);
    }
  }
  assert.deepEqual(bad, []);
});

Deno.test("MqClient is a BrokerClient", () => {
  assert.equal(
    typeof asBrokerClient(new MqClient({ baseUrl: "http://127.0.0.1:1" })).produce,
    "function",
  );
});
