// Routes the store's "new message in topic:queue" signal by registration: a service that
// owns a system topic (delay levels, timers, POP revive) registers for it; everything
// else goes to the listeners of client topics (long polling, webhooks).
import type { MessageStore } from "../../storage/message_store.ts";

export type ArrivalListener = (topic: string, queueId: number, maxOffset: number) => void;

export class ArrivalRouter {
  readonly #system = new Map<string, ArrivalListener>();
  readonly #client: ArrivalListener[] = [];

  constructor(store: MessageStore) {
    store.onArrival((topic, queueId, maxOffset) => this.#dispatch(topic, queueId, maxOffset));
  }

  /** `listener` alone hears arrivals in `topic` (one owner per system topic). */
  registerSystemTopic(topic: string, listener: ArrivalListener): void {
    if (this.#system.has(topic)) throw new Error(`${topic} already has an arrival listener`);
    this.#system.set(topic, listener);
  }

  /** `listener` hears arrivals in every topic no system service owns. */
  registerClientTopics(listener: ArrivalListener): void {
    this.#client.push(listener);
  }

  #dispatch(topic: string, queueId: number, maxOffset: number): void {
    const owner = this.#system.get(topic);
    if (owner !== undefined) return owner(topic, queueId, maxOffset);
    for (const listener of this.#client) listener(topic, queueId, maxOffset);
  }
}
