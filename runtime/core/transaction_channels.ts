// Where a check goes: a front end holding a connection to a producer of the group (gRPC
// Telemetry, remoting; registered through TransactionCheckHost), else the group's check
// URL (PUT /v1/producer-groups/{group}/transaction-check: vetted by the webhook SSRF guard,
// posted through the webhook egress, signed as Standard Webhooks), else the group's
// long-poll queue. Check URLs are kept in transactionChecks.json in the data folder.
import { type FilePort, readWholeFile, writeFileAtomic } from "../../storage/file_port.ts";
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

export interface CheckChannelDeps {
  files: FilePort;
  dataDir: string;
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
}

const FILE = "transactionChecks.json";
const ANSWERS: ReadonlySet<string> = new Set(["COMMIT", "ROLLBACK", "UNKNOWN"]);

export class TransactionCheckChannels implements TransactionCheckHost {
  readonly #d: CheckChannelDeps;
  readonly #frontEnds = new Map<string, TransactionCheckChannel[]>();
  readonly #urls: Map<string, CheckUrl>;

  constructor(deps: CheckChannelDeps) {
    this.#d = deps;
    const bytes = readWholeFile(deps.files, this.#path);
    const saved = bytes ? JSON.parse(new TextDecoder().decode(bytes)) : {};
    this.#urls = new Map(Object.entries(saved as Record<string, CheckUrl>));
  }

  get #path(): string {
    return `${this.#d.dataDir}/${FILE}`;
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
    this.#urls.set(group, { url: input.url, secrets: [...secrets] });
    await this.#save();
    return { producerGroup: group, url: input.url, secrets: [...secrets] };
  }

  get(group: string): TransactionCheckView {
    const c = this.#urls.get(checkGroup(group));
    if (c === undefined) {
      throw new BrokerError("GROUP_NOT_FOUND", `No transaction check URL for group ${group}`);
    }
    return { producerGroup: group, url: c.url, secrets: c.secrets.map(maskSecret) };
  }

  async delete(group: string): Promise<void> {
    this.get(group);
    this.#urls.delete(group);
    await this.#save();
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

  #save(): Promise<void> {
    const json = JSON.stringify(Object.fromEntries(this.#urls));
    return writeFileAtomic(this.#d.files, this.#path, new TextEncoder().encode(json));
  }
}
