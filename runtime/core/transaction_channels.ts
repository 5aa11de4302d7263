// Where a check goes: a front end holding a connection to a producer of the group (gRPC
// Telemetry, remoting; registered through TransactionCheckHost), else the group's check URL
// (PUT /v1/producer-groups/{group}/transaction-check: vetted by the webhook SSRF guard,
// posted through the webhook egress, signed as Standard Webhooks), else the group's
// long-poll queue.
//
// Check URLs live in the log too, so a slave holds them and a promoted one calls them: one
// record per change in rmq_sys_TRANS_CHECK_URL queue 0 (PGROUP = the group, body = JSON
// {url, secrets} or {deleted: true}); the newest record of a group wins. A record older than
// a third of fileReservedTime is put again (refresh()), so retention never deletes the last
// word on a group.
import type { MessageStore } from "../../storage/message_store.ts";
import type { PutResult } from "../../storage/store_types.ts";
import { PROPERTY_PRODUCER_GROUP, PROPERTY_TAGS } from "../../storage/message/message_const.ts";
import type { Logger } from "../log.ts";
import { BrokerError } from "../protocol/errors.ts";
import { checkGroup } from "../protocol/names.ts";
import type { TransactionCheckChannel, TransactionCheckHost } from "../protocol/core_api.ts";
import type {
  TransactionCheck,
  TransactionCheckAnswer,
  TransactionCheckInput,
  TransactionCheckView,
} from "../protocol/transaction_types.ts";
import type { WebhookTransport } from "../webhook/delivery_types.ts";
import {
  generateSecret,
  maskSecret,
  secretKey,
  SECRETS_MAX,
  signatureHeader,
} from "../webhook/signing.ts";
import type { TransactionPollQueues } from "./transaction_poll.ts";
import { LOOPBACK } from "./store_host.ts";

export interface CheckChannelDeps {
  store: MessageStore;
  /** Puts a record through the producer's gate (Producer.putInternal). */
  put: (input: ReturnType<typeof urlRecord>) => Promise<PutResult>;
  /** fileReservedTime in ms: records are refreshed at a third of it. */
  retentionMs: number;
  transport: WebhookTransport;
  /** Throws WEBHOOK_URL_REFUSED for a URL the SSRF guard refuses. */
  checkUrl(url: string): void;
  polls: TransactionPollQueues;
  nowMs: () => number;
  log: Logger;
  /** Per check request (webhookTimeoutMsDefault). */
  timeoutMs: number;
}

interface CheckUrl {
  url: string;
  secrets: string[];
  /** Store time of the record that says so. */
  storedAt: number;
}

/** Check URL registrations, one record per change (ours, not RocketMQ's). */
export const TRANS_CHECK_URL_TOPIC = "rmq_sys_TRANS_CHECK_URL";
const SCAN = { maxMsgNums: 256, maxBytes: 4 * 1024 * 1024 };
const utf8 = new TextDecoder();

function urlRecord(group: string, value: { url: string; secrets: string[] } | null, now: number) {
  return {
    topic: TRANS_CHECK_URL_TOPIC,
    queueId: 0,
    body: new TextEncoder().encode(JSON.stringify(value ?? { deleted: true })),
    properties: new Map([[PROPERTY_TAGS, "url"], [PROPERTY_PRODUCER_GROUP, group]]),
    bornTimestamp: now,
    bornHost: LOOPBACK,
  };
}
const ANSWERS: ReadonlySet<string> = new Set(["COMMIT", "ROLLBACK", "UNKNOWN"]);

export class TransactionCheckChannels implements TransactionCheckHost {
  readonly #d: CheckChannelDeps;
  readonly #frontEnds = new Map<string, TransactionCheckChannel[]>();
  readonly #urls: Map<string, CheckUrl>;

  readonly #refreshing = new Set<string>();

  constructor(deps: CheckChannelDeps) {
    this.#d = deps;
    this.#urls = new Map();
    const { store } = deps;
    const max = store.getMaxOffsetInQueue(TRANS_CHECK_URL_TOPIC, 0);
    for (let o = store.getMinOffsetInQueue(TRANS_CHECK_URL_TOPIC, 0); o < max;) {
      const got = store.getMessage(TRANS_CHECK_URL_TOPIC, 0, o, SCAN);
      for (const { record } of got.messages) {
        const group = record.properties.get(PROPERTY_PRODUCER_GROUP);
        if (group === undefined) continue;
        const value = JSON.parse(utf8.decode(record.body)) as Partial<CheckUrl> & {
          deleted?: boolean;
        };
        if (value.deleted || typeof value.url !== "string") this.#urls.delete(group);
        else {
          this.#urls.set(group, {
            url: value.url,
            secrets: value.secrets ?? [],
            storedAt: record.storeTimestamp,
          });
        }
      }
      if (got.nextBeginOffset <= o) break;
      o = got.nextBeginOffset;
    }
  }

  /** Puts again each registration whose record is older than a third of fileReservedTime. */
  refresh(): void {
    const old = this.#d.nowMs() - this.#d.retentionMs / 3;
    for (const [group, c] of this.#urls) {
      if (c.storedAt > old || this.#refreshing.has(group)) continue;
      this.#refreshing.add(group);
      this.#d.put(urlRecord(group, c, this.#d.nowMs())).then(
        (r) => c.storedAt = r.storeTimestamp,
        (err) => this.#d.log("warn", "refreshing a check URL failed", { group, err: String(err) }),
      ).finally(() => this.#refreshing.delete(group));
    }
  }

  registerTransactionCheckChannel(group: string, channel: TransactionCheckChannel): () => void {
    const list = this.#frontEnds.get(group) ?? [];
    list.push(channel);
    this.#frontEnds.set(group, list);
    return () => {
      const now = this.#frontEnds.get(group)?.filter((c) => c !== channel) ?? [];
      if (now.length === 0) this.#frontEnds.delete(group);
      else this.#frontEnds.set(group, now);
    };
  }

  async set(group: string, input: TransactionCheckInput): Promise<TransactionCheckView> {
    checkGroup(group);
    if (typeof input?.url !== "string") {
      throw new BrokerError("INVALID_PARAMETER", "A transaction check needs a url");
    }
    this.#d.checkUrl(input.url);
    let secrets = input.secrets;
    if (secrets === undefined) secrets = this.#urls.get(group)?.secrets ?? [generateSecret()];
    if (!Array.isArray(secrets) || secrets.length < 1 || secrets.length > SECRETS_MAX) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        `secrets must be a list of 1-${SECRETS_MAX} whsec_ secrets`,
      );
    }
    for (const s of secrets) secretKey(s);
    const value = { url: input.url, secrets: [...secrets] };
    const r = await this.#d.put(urlRecord(group, value, this.#d.nowMs()));
    this.#urls.set(group, { ...value, storedAt: r.storeTimestamp });
    return { producerGroup: group, url: input.url, secrets: [...secrets] };
  }

  get(group: string): TransactionCheckView {
    const c = this.#urls.get(checkGroup(group));
    if (c === undefined) {
      throw new BrokerError("GROUP_NOT_FOUND", `No transaction check URL for group ${group}`);
    }
    return { producerGroup: group, url: c.url, secrets: c.secrets.map(maskSecret) };
  }

  list(revealSecrets = false): TransactionCheckView[] {
    return [...this.#urls.keys()].sort().map((group) => {
      const c = this.#urls.get(group)!;
      const secrets = revealSecrets ? [...c.secrets] : c.secrets.map(maskSecret);
      return { producerGroup: group, url: c.url, secrets };
    });
  }

  async delete(group: string): Promise<void> {
    this.get(group);
    await this.#d.put(urlRecord(group, null, this.#d.nowMs()));
    this.#urls.delete(group);
  }

  /** Sends `check` on the first channel that takes it; undefined when the answer, if any,
   * comes later as an endTransaction. */
  async send(check: TransactionCheck): Promise<TransactionCheckAnswer | undefined> {
    const group = check.producerGroup;
    const frontEnds = this.#frontEnds.get(group) ?? [];
    // Rotate, so the checks of a group spread over its producers.
    if (frontEnds.length > 1) frontEnds.push(frontEnds.shift()!);
    for (const channel of frontEnds) {
      try {
        return await channel.send(check);
      } catch (err) {
        this.#d.log("debug", "transaction check channel failed", { group, err: String(err) });
      }
    }
    const url = this.#urls.get(group);
    if (url !== undefined) return await this.#post(url, check);
    this.#d.polls.offer(check);
    return undefined;
  }

  async #post(target: CheckUrl, check: TransactionCheck): Promise<TransactionCheckAnswer> {
    const body = new TextEncoder().encode(JSON.stringify(check));
    const id = `${check.transactionId}_${check.check}`;
    const timestamp = Math.floor(this.#d.nowMs() / 1000);
    try {
      const res = await this.#d.transport({
        url: target.url,
        headers: {
          "content-type": "application/json",
          "user-agent": "edgemq-transaction-check/1",
          "webhook-id": id,
          "webhook-timestamp": String(timestamp),
          "webhook-signature": signatureHeader(target.secrets.map(secretKey), id, timestamp, body),
          "mq-transaction-id": check.transactionId,
        },
        body,
        timeoutMs: this.#d.timeoutMs,
        signal: AbortSignal.timeout(this.#d.timeoutMs),
      });
      if (res.status < 200 || res.status > 299) return "UNKNOWN";
      const decision = (JSON.parse(res.bodyPrefix) as { decision?: unknown }).decision;
      return typeof decision === "string" && ANSWERS.has(decision)
        ? decision as TransactionCheckAnswer
        : "UNKNOWN";
    } catch (err) {
      this.#d.log("debug", "transaction check request failed", {
        group: check.producerGroup,
        err: String(err),
      });
      return "UNKNOWN";
    }
  }
}
