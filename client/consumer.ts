// The consumer loop: receive (POP, long-polling) → handler → ack; a handler that throws
// gives its message back with nack and a backoff that grows with the message's
// reconsumeTimes, so the broker redelivers it (and dead-letters it after the group's
// retryMaxTimes). At most `concurrency` handlers run at once; a receive asks for as many
// messages as there are free slots, once half of them are free. Stopping (stop() or the signal) ends the held receive,
// lets running handlers finish and settles their messages, then resolves `done`.
import { sleep } from "./http.ts";
import type { PopMessage, ReceiveOptions, SignalSource } from "./types.ts";

/** What the loop needs from a client (MqClient has it). */
export interface ReceiveClient {
  receive(
    group: string,
    options: ReceiveOptions,
    signal?: SignalSource,
  ): Promise<PopMessage[]>;
  ack(group: string, receiptHandle: string): Promise<void>;
  nack(group: string, receiptHandle: string, delayMs?: number): Promise<void>;
}

export type MessageHandler = (
  message: PopMessage,
) => unknown | Promise<unknown>;

export interface SubscribeOptions {
  /** Handlers running at once. Default SUBSCRIBE_CONCURRENCY_DEFAULT. */
  concurrency?: number;
  /** Aborting it stops the loop gracefully (as stop() does). */
  signal?: AbortSignal;
  /** How long a receive is held when no message is ready, ms. Default 10 000. */
  waitMs?: number;
  /** How long a received message stays invisible to others, ms (the broker's default
   * when left out). A handler that runs longer may see its message delivered again. */
  invisibleMs?: number;
  /** Required for broadcasting groups. */
  clientId?: string;
  /** The nack delay for a message whose handler threw, from its reconsumeTimes.
   * Default: 1 s doubled per earlier delivery, at most 60 s. */
  retryDelayMs?: (reconsumeTimes: number) => number;
  /** Told about handler failures and failed receives, acks and nacks (the loop goes on).
   * Default: console.error. */
  onError?: (error: unknown, message?: PopMessage) => void;
}

export interface Subscription {
  /** Stops receiving, waits for running handlers and their acks/nacks. */
  stop(): Promise<void>;
  /** Resolves once the loop has stopped. */
  readonly done: Promise<void>;
}

export const SUBSCRIBE_CONCURRENCY_DEFAULT = 8;
export const SUBSCRIBE_WAIT_MS_DEFAULT = 10_000;
/** Pause after a failed receive, ms, doubled per failure in a row up to 30 s. */
const RECEIVE_RETRY_MS = 250;

const defaultRetryDelay = (n: number) => Math.min(60_000, 1000 * 2 ** Math.min(n, 6));

export function subscribe(
  client: ReceiveClient,
  topic: string,
  group: string,
  handler: MessageHandler,
  options: SubscribeOptions = {},
): Subscription {
  const concurrency = options.concurrency ?? SUBSCRIBE_CONCURRENCY_DEFAULT;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new RangeError(
      `concurrency must be a positive integer, not ${concurrency}`,
    );
  }
  const refillAt = Math.ceil(concurrency / 2);
  const retryDelay = options.retryDelayMs ?? defaultRetryDelay;
  const onError = options.onError ??
    ((e: unknown) => console.error("edgemq subscribe:", e));
  const stopper = new AbortController();
  const running = new Set<Promise<void>>();
  let slotFreed: (() => void) | undefined;
  const halt = () => {
    stopper.abort();
    slotFreed?.();
  };
  const outer = options.signal;
  if (outer?.aborted) halt();
  else outer?.addEventListener("abort", halt, { once: true });

  const settle = async (message: PopMessage) => {
    try {
      await handler(message);
    } catch (err) {
      onError(err, message);
      try {
        await client.nack(
          group,
          message.receiptHandle,
          retryDelay(message.reconsumeTimes),
        );
      } catch (nackErr) {
        onError(nackErr, message); // the invisible time runs out and it comes back anyway
      }
      return;
    }
    try {
      await client.ack(group, message.receiptHandle);
    } catch (ackErr) {
      onError(ackErr, message);
    }
  };

  const start = (message: PopMessage) => {
    const task: Promise<void> = settle(message).finally(() => {
      running.delete(task);
      slotFreed?.();
    });
    running.add(task);
  };

  const loop = async () => {
    let failures = 0;
    while (!stopper.signal.aborted) {
      // Refill when half the slots are free (or all): a receive per freed slot would cost
      // one more request per message.
      if (running.size > 0 && concurrency - running.size < refillAt) {
        await new Promise<void>((resolve) => slotFreed = resolve);
        slotFreed = undefined;
        continue;
      }
      let messages: PopMessage[];
      try {
        messages = await client.receive(group, {
          topic,
          max: concurrency - running.size,
          waitMs: options.waitMs ?? SUBSCRIBE_WAIT_MS_DEFAULT,
          invisibleMs: options.invisibleMs,
          clientId: options.clientId,
        }, stopper.signal);
        failures = 0;
      } catch (err) {
        if (stopper.signal.aborted) break;
        onError(err);
        await sleep(
          Math.min(30_000, RECEIVE_RETRY_MS * 2 ** failures++),
          stopper.signal,
        )
          .catch(() => {});
        continue;
      }
      for (const m of messages) start(m);
    }
    while (running.size > 0) await Promise.all([...running]);
    outer?.removeEventListener("abort", halt);
  };

  const done = loop();
  return {
    done,
    stop() {
      halt();
      return done;
    },
  };
}
