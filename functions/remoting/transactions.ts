// Transactions over remoting (reference/rocketmq.md §16, §17; docs/transactions.md). A send
// with sysFlag TRANSACTION_PREPARED (4) stores a half message (send_handlers.ts calls the
// core's beginTransaction); END_TRANSACTION (37) commits (8) or rolls back (12), 0 being
// "unknown": no call, as RocketMQ does; a producer's heartbeat (producerDataSet) registers its
// connection as a check channel of each of its groups, and a check goes to it as
// CHECK_TRANSACTION_STATE (39, oneway) with the half record in its body, under its real
// topic and queue as RocketMQ's broker sends it (AbstractTransactionalMessageCheckListener).
// The producer answers with END_TRANSACTION, fromTransactionCheck=true.
import { FLAG_ONEWAY, type RemotingCommand, SERIALIZE_JSON } from "./codec.ts";
import { RequestCode } from "./codes.ts";
import { int, ok, optionalText, parseJsonBody, type RemotingCore } from "./headers.ts";
import { offsetHex } from "./message.ts";
import { withTopic } from "./record_bytes.ts";
import type { Connection } from "./server.ts";
import type { TransactionCheck } from "../../runtime/protocol/transaction_types.ts";

/** END_TRANSACTION's commitOrRollback (MessageSysFlag). */
const COMMIT = 8;
const ROLLBACK = 12;

export async function handleEndTransaction(
  core: RemotingCore,
  req: RemotingCommand,
): Promise<RemotingCommand | undefined> {
  const kind = int(req, "commitOrRollback");
  if (kind !== COMMIT && kind !== ROLLBACK) return ok(req); // unknown: ask again later
  // Our send answers carry the core's id as transactionId; msgId is the same UNIQ_KEY.
  const id = optionalText(req, "transactionId") ?? optionalText(req, "msgId") ?? "";
  await core.endTransaction(id, kind === COMMIT ? "COMMIT" : "ROLLBACK", {
    fromCheck: optionalText(req, "fromTransactionCheck") === "true",
  });
  return ok(req);
}

interface HeartbeatProducers {
  producerDataSet?: { groupName?: unknown }[];
}

/** Connections of producers, as check channels of their groups. Bounded by the
 * connections and the groups each names. */
export class RemotingProducers {
  readonly #byConnection = new Map<Connection, Map<string, () => void>>();
  #opaque = 0;

  constructor(
    private readonly core: RemotingCore,
    /** offsetMessageIdPrefix() of the store host. */
    private readonly idPrefix: string,
  ) {}

  /** Registers the producer groups a HEART_BEAT names (a bad body is the consumer
   * handler's to refuse). */
  heartbeat(req: RemotingCommand, conn: Connection): void {
    let data: HeartbeatProducers;
    try {
      data = parseJsonBody<HeartbeatProducers>(req);
    } catch {
      return;
    }
    for (const p of data?.producerDataSet ?? []) {
      const group = typeof p?.groupName === "string" ? p.groupName : "";
      if (group === "" || group === "CLIENT_INNER_PRODUCER") continue;
      let groups = this.#byConnection.get(conn);
      if (groups === undefined) this.#byConnection.set(conn, groups = new Map());
      if (groups.has(group)) continue;
      groups.set(
        group,
        this.core.registerTransactionCheckChannel(group, {
          send: (check) => this.#check(conn, check),
        }),
      );
    }
  }

  closed(conn: Connection): void {
    for (const unregister of this.#byConnection.get(conn)?.values() ?? []) unregister();
    this.#byConnection.delete(conn);
  }

  async #check(conn: Connection, check: TransactionCheck): Promise<undefined> {
    if (conn.signal.aborted) throw new Error("the producer's connection is closed");
    const offset = check.message.commitLogOffset;
    const stored = await this.core.recordAt(offset);
    if (stored === undefined) throw new Error("the half message is gone");
    const body = withTopic(stored, check.topic, check.queueId);
    this.#opaque = (this.#opaque + 1) & 0x7fffffff;
    conn.send({
      code: RequestCode.CHECK_TRANSACTION_STATE,
      language: "JAVA",
      version: 0,
      opaque: this.#opaque,
      flag: FLAG_ONEWAY,
      extFields: {
        tranStateTableOffset: String(check.message.queueOffset),
        commitLogOffset: String(offset),
        msgId: check.messageId,
        transactionId: check.transactionId,
        offsetMsgId: this.idPrefix + offsetHex(offset),
        topic: check.topic,
        producerGroup: check.producerGroup,
      },
      body,
      serializeType: SERIALIZE_JSON,
    });
    return undefined; // the answer comes as END_TRANSACTION
  }
}
