// The broker's side of the QStash dialect (docs/qstash.md): the signing keys (kept in the
// metadata database, so a replicated group's slaves have them; rotated on request), the Upstash-Signature JWT of each delivery
// (runtime/webhook/qstash_jwt.ts, with the current key), and the callback and failure-callback messages a delivered or
// dead-lettered message asks for. Deliveries themselves are the webhook engine's.
import { randomBytes } from "../protocol/node_builtins.ts";
import type { FilePort } from "../../storage/file_port.ts";
import { PROPERTY_CONTENT_TYPE } from "../../storage/message/message_const.ts";
import type { QstashApi } from "../protocol/core_api.ts";
import { BrokerError } from "../protocol/errors.ts";
import {
  QSTASH_CALLBACK_TOPIC,
  QSTASH_PROPERTY,
  type QstashSettings,
  type QstashSigningKeys,
} from "../protocol/qstash.ts";
import type { ProduceMessage, ProduceResult } from "../protocol/types.ts";
import type { Logger } from "../log.ts";
import type { QstashDelivery, QstashOutcome } from "../webhook/delivery_types.ts";
import { QstashJwtSigner } from "../webhook/qstash_jwt.ts";
import { loadQstashState, type QstashStatePort } from "./qstash_state.ts";

/** The keys' row in qstash_state, and the file older brokers kept them in. */
const KEYS_NAME = "signing_keys";
const KEYS_FILE = "qstash_keys.json";

export interface QstashCoreDeps {
  state: QstashStatePort;
  /** The data folder: a legacy keys file there is moved into `state`. */
  files: FilePort;
  dataDir: string;
  settings: QstashSettings & { qstashCurrentSigningKey: string; qstashNextSigningKey: string };
  checkUrl(url: string): void;
  produce(topic: string, message: ProduceMessage): Promise<ProduceResult>;
  nowMs: () => number;
  log: Logger;
}

export class QstashCore implements
  Pick<
    QstashApi,
    | "qstashSigningKeys"
    | "rotateQstashSigningKeys"
    | "setQstashSigningKeys"
    | "checkDestination"
    | "qstashSettings"
  >,
  QstashDelivery {
  #keys: QstashSigningKeys;
  #signer: QstashJwtSigner;
  readonly #encoder = new TextEncoder();

  constructor(private readonly d: QstashCoreDeps) {
    this.#keys = {
      current: d.settings.qstashCurrentSigningKey || newKey(),
      next: d.settings.qstashNextSigningKey || newKey(),
    };
    this.#signer = new QstashJwtSigner(this.#keys.current);
  }

  /** Loads the stored keys, or stores the new ones (so they survive a restart and a
   * failover). */
  async start(): Promise<void> {
    const saved = await loadQstashState(this.d.state, KEYS_NAME, {
      files: this.d.files,
      path: `${this.d.dataDir}/${KEYS_FILE}`,
    }) as QstashSigningKeys | undefined;
    if (saved === undefined) return await this.#save();
    this.#keys = { current: saved.current, next: saved.next };
    this.#signer = new QstashJwtSigner(this.#keys.current);
  }

  qstashSigningKeys(): Promise<QstashSigningKeys> {
    return Promise.resolve({ ...this.#keys });
  }

  async rotateQstashSigningKeys(): Promise<QstashSigningKeys> {
    this.#keys = { current: this.#keys.next, next: newKey() };
    this.#signer = new QstashJwtSigner(this.#keys.current);
    await this.#save();
    return { ...this.#keys };
  }

  async setQstashSigningKeys(keys: QstashSigningKeys): Promise<QstashSigningKeys> {
    for (const key of [keys?.current, keys?.next]) {
      if (typeof key !== "string" || !KEY.test(key)) {
        throw new BrokerError(
          "INVALID_PARAMETER",
          "QStash signing keys must be sig_ followed by 16-128 base64url characters",
        );
      }
    }
    this.#keys = { current: keys.current, next: keys.next };
    this.#signer = new QstashJwtSigner(this.#keys.current);
    await this.#save();
    return { ...this.#keys };
  }

  checkDestination(url: string): Promise<void> {
    if (!/^https?:\/\//i.test(url)) {
      throw new BrokerError(
        "WEBHOOK_URL_REFUSED",
        `Destination ${JSON.stringify(url.slice(0, 200))} must be an http:// or https:// URL`,
      );
    }
    this.d.checkUrl(url);
    return Promise.resolve();
  }

  qstashSettings(): Promise<QstashSettings> {
    const { retriesDefault, retriesMax, retryBackoffMs, concurrency, timeoutMsMax } =
      this.d.settings;
    return Promise.resolve({
      retriesDefault,
      retriesMax,
      retryBackoffMs,
      concurrency,
      timeoutMsMax,
    });
  }

  sign(url: string, body: Uint8Array): string {
    return this.#signer.sign(url, body, Math.floor(this.d.nowMs() / 1000));
  }

  settled(outcome: QstashOutcome): void {
    const props = outcome.record.properties;
    const ok = outcome.status >= 200 && outcome.status < 300;
    const target = ok || !outcome.deadLettered
      ? props.get(QSTASH_PROPERTY.callback)
      : props.get(QSTASH_PROPERTY.failureCallback);
    // A failed message tells its callback too (QStash calls it after the last attempt).
    const also = outcome.deadLettered ? props.get(QSTASH_PROPERTY.callback) : undefined;
    for (const url of new Set([target, also])) {
      if (url !== undefined) this.#callback(url, outcome);
    }
  }

  #callback(url: string, o: QstashOutcome) {
    const props = o.record.properties;
    const sourceHeader: Record<string, string[]> = {};
    const forwarded = props.get(QSTASH_PROPERTY.headers);
    if (forwarded) {
      for (const [k, v] of Object.entries(JSON.parse(forwarded))) sourceHeader[k] = [String(v)];
    }
    const contentType = props.get(PROPERTY_CONTENT_TYPE);
    if (contentType) sourceHeader["Content-Type"] = [contentType];
    const event = {
      status: o.status,
      header: {},
      body: Buffer.from(o.responseBody).toString("base64"),
      retried: o.retried,
      maxRetries: o.maxRetries,
      sourceMessageId: o.messageId,
      url: o.url,
      method: "POST",
      sourceHeader,
      sourceBody: Buffer.from(o.record.body).toString("base64"),
      notBefore: String(o.record.bornTimestamp),
      createdAt: String(o.record.bornTimestamp),
      ...(o.urlGroup !== undefined ? { topicName: o.urlGroup } : {}),
      ...(props.has(QSTASH_PROPERTY.scheduleId)
        ? { scheduleId: props.get(QSTASH_PROPERTY.scheduleId) }
        : {}),
      ...(o.deadLettered ? { dlqId: `${o.group}:${o.messageId}` } : {}),
    };
    this.d.produce(QSTASH_CALLBACK_TOPIC, {
      body: this.#encoder.encode(JSON.stringify(event)),
      contentType: "application/json",
      properties: {
        [QSTASH_PROPERTY.url]: url,
        [QSTASH_PROPERTY.callbackOf]: o.messageId,
      },
    }).catch((err) =>
      this.d.log("warn", "a QStash callback could not be stored", {
        messageId: o.messageId,
        err: String(err),
      })
    );
  }

  #save(): Promise<void> {
    return this.d.state.put(KEYS_NAME, this.#keys);
  }
}

/** `sig_` + 28 random characters, like QStash's keys. */
const KEY = /^sig_[A-Za-z0-9_-]{16,128}$/;

function newKey(): string {
  return "sig_" + randomBytes(21).toString("base64url");
}
