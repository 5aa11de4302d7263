// What the broker role remembers of its remoting consumers: which connections speak for
// which group (to tell them NOTIFY_CONSUMER_IDS_CHANGED and to unregister a closed one),
// and each group's subscription per topic from its heartbeats (a Java consumer sends its
// tag expression there, not on every pull). Bounded: one entry per live connection and
// group, and at most `subscriptionsMax` subscriptions.
import { FLAG_ONEWAY, type RemotingCommand, SERIALIZE_JSON } from "./codec.ts";
import { RequestCode } from "./codes.ts";
import type { Connection } from "./server.ts";

export class RemotingConsumers {
  readonly #byGroup = new Map<string, Map<Connection, string>>();
  readonly #byConnection = new Map<Connection, Map<string, string>>();
  readonly #subscriptions = new Map<string, string>();
  #opaque = 0;

  constructor(private readonly subscriptionsMax: number) {}

  /** `clientId` of `group` speaks over `conn`. */
  bind(conn: Connection, group: string, clientId: string): void {
    let clients = this.#byGroup.get(group);
    if (!clients) this.#byGroup.set(group, clients = new Map());
    clients.set(conn, clientId);
    let groups = this.#byConnection.get(conn);
    if (!groups) this.#byConnection.set(conn, groups = new Map());
    groups.set(group, clientId);
  }

  unbind(conn: Connection, group: string): void {
    this.#byGroup.get(group)?.delete(conn);
    if (this.#byGroup.get(group)?.size === 0) this.#byGroup.delete(group);
    this.#byConnection.get(conn)?.delete(group);
  }

  /** The (group, clientId) pairs a closed connection spoke for; forgets them. */
  closed(conn: Connection): [string, string][] {
    const groups = [...(this.#byConnection.get(conn) ?? new Map<string, string>())];
    for (const [group] of groups) this.unbind(conn, group);
    this.#byConnection.delete(conn);
    return groups;
  }

  subscribe(group: string, topic: string, expression: string): void {
    const key = `${group}\u0000${topic}`;
    if (this.#subscriptions.get(key) === expression) return;
    this.#subscriptions.delete(key);
    if (this.#subscriptions.size >= this.subscriptionsMax) {
      const oldest = this.#subscriptions.keys().next().value;
      if (oldest !== undefined) this.#subscriptions.delete(oldest);
    }
    this.#subscriptions.set(key, expression);
  }

  subscription(group: string, topic: string): string | undefined {
    return this.#subscriptions.get(`${group}\u0000${topic}`);
  }

  /** NOTIFY_CONSUMER_IDS_CHANGED (40), oneway, to every connection of `group`. */
  notifyChanged(group: string): void {
    for (const conn of this.#byGroup.get(group)?.keys() ?? []) {
      this.#opaque = (this.#opaque + 1) & 0x7fffffff;
      conn.send(notice(group, this.#opaque));
    }
  }
}

function notice(group: string, opaque: number): RemotingCommand {
  return {
    code: RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
    language: "JAVA",
    version: 0,
    opaque,
    flag: FLAG_ONEWAY,
    extFields: { consumerGroup: group },
    serializeType: SERIALIZE_JSON,
  };
}
