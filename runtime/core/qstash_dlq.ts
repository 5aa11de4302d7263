// The QStash DLQ over our dead-letter queues: QStash deletes single letters and removes a
// letter once it is retried, and a retry goes to the one endpoint that failed. Our
// %DLQ%{group} is a log with a purge cursor, so deleted and retried letters are kept as
// tombstones (row "dlq_tombstones" of the metadata table qstash_state, so slaves have them)
// that listings skip; a tombstone goes
// once a full listing no longer sees its letter (purged or aged out). A retry puts the
// letter into %RETRY%{group}, which only that group's subscription reads.
import type { MessageStore } from "../../storage/message_store.ts";
import type { FilePort } from "../../storage/file_port.ts";
import { PROPERTY_DLQ_ORIGIN_TOPIC } from "../../storage/message/message_const.ts";
import type { PullResult, WireMessage } from "../protocol/types.ts";
import { dlqTopicOf, retryTopicOf } from "../pop/group_topics.ts";
import { loadQstashState, type QstashStatePort } from "./qstash_state.ts";

/** The tombstones' row in qstash_state, and the file older brokers kept them in. */
const TOMBSTONES_NAME = "dlq_tombstones";
const TOMBSTONES_FILE = "qstash_dlq_deleted.json";

export interface QstashDlqDeps {
  store: MessageStore;
  state: QstashStatePort;
  /** The data folder: a legacy tombstones file there is moved into `state`. */
  files: FilePort;
  dataDir: string;
  storeHost: { ip: Uint8Array; port: number };
  listDlq(group: string, options: { offset?: number; max?: number }): Promise<PullResult>;
  /** Letters a listing reads per page. */
  pageMax: number;
}

export class QstashDeadLetters {
  /** group -> ids of letters deleted or retried. */
  readonly #gone = new Map<string, Set<string>>();
  #loaded: Promise<void> | undefined;

  constructor(private readonly d: QstashDlqDeps) {}

  /** Reads the tombstones on first use. */
  #load(): Promise<void> {
    return this.#loaded ??= loadQstashState(this.d.state, TOMBSTONES_NAME, {
      files: this.d.files,
      path: `${this.d.dataDir}/${TOMBSTONES_FILE}`,
    }).then((saved) => {
      const json = (saved ?? {}) as Record<string, string[]>;
      for (const [group, ids] of Object.entries(json)) this.#gone.set(group, new Set(ids));
    }).catch((err) => {
      this.#loaded = undefined; // tried again by the next call
      throw err;
    });
  }

  /** The group's letters not deleted or retried, oldest first, at most `max`. */
  async listDeadLetters(group: string, max: number): Promise<WireMessage[]> {
    await this.#load();
    const gone = this.#gone.get(group);
    const out: WireMessage[] = [];
    const seen = new Set<string>();
    let offset: number | undefined;
    let complete = false;
    while (out.length < max) {
      const page = await this.d.listDlq(group, { offset, max: this.d.pageMax });
      for (const m of page.messages) {
        seen.add(m.messageId);
        if (!gone?.has(m.messageId) && out.length < max) out.push(m);
      }
      if (page.messages.length === 0 || page.nextOffset >= page.maxOffset) {
        complete = true;
        break;
      }
      offset = page.nextOffset;
    }
    if (complete && gone && [...gone].some((id) => !seen.has(id))) {
      for (const id of gone) if (!seen.has(id)) gone.delete(id);
      await this.#save();
    }
    return out;
  }

  /** Marks letters deleted; the count of those that were listed. */
  async deleteDeadLetters(group: string, messageIds: string[]): Promise<number> {
    const live = new Set((await this.listDeadLetters(group, Infinity)).map((m) => m.messageId));
    const hit = messageIds.filter((id) => live.has(id));
    if (hit.length > 0) {
      let gone = this.#gone.get(group);
      if (!gone) this.#gone.set(group, gone = new Set());
      for (const id of hit) gone.add(id);
      await this.#save();
    }
    return hit.length;
  }

  /** Puts the letters back for the group's subscription alone, then deletes them. */
  async retryDeadLetters(group: string, messageIds: string[]): Promise<string[]> {
    const wanted = new Set(messageIds);
    const letters = (await this.listDeadLetters(group, Infinity)).filter((m) =>
      wanted.has(m.messageId)
    );
    const dlq = dlqTopicOf(group);
    for (const letter of letters) {
      const got = this.d.store.getMessage(dlq, 0, letter.queueOffset, {
        maxMsgNums: 1,
        maxBytes: Number.MAX_SAFE_INTEGER, // one message, whatever its size
      });
      const record = got.messages[0]?.record;
      if (!record) continue;
      const properties = new Map(record.properties);
      properties.delete(PROPERTY_DLQ_ORIGIN_TOPIC);
      await this.d.store.putMessage({
        topic: retryTopicOf(group),
        queueId: 0,
        body: record.body,
        flag: record.flag,
        properties,
        bornTimestamp: record.bornTimestamp,
        bornHost: record.bornHost,
        storeHost: this.d.storeHost,
        reconsumeTimes: 0,
      });
    }
    const ids = letters.map((m) => m.messageId);
    await this.deleteDeadLetters(group, ids);
    return ids;
  }

  #save(): Promise<void> {
    const json: Record<string, string[]> = {};
    for (const [group, ids] of this.#gone) if (ids.size > 0) json[group] = [...ids];
    return this.d.state.put(TOMBSTONES_NAME, json);
  }
}
