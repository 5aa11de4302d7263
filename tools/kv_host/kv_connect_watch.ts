// The watch endpoint: a long-lived response that sends a frame with every watched key
// first, then a frame each time one of them is written. Changes are coalesced: a client
// that reads slowly gets one frame with the latest values, not one per commit, so a
// stream holds at most one pending frame whatever the write rate.
//
// Every frame carries every watched key as changed, with its current entry. The protocol
// allows `changed: false` for the others, but Deno 2.9's client turns an unchanged key
// into null, which its watch() then reports as a deletion; both clients drop repeats of
// an unchanged versionstamp themselves.
import {
  decodeWatch,
  encodeWatchFrame,
  WATCH_KEEPALIVE_FRAME,
  type WatchKeyOutput,
} from "./kv_connect_messages.ts";
import { type MemoryKvStore, toHex } from "./memory_kv_store.ts";

/** Ends each open watch stream; the host calls them all on close. */
export type WatchRegistry = Set<() => void>;

export function serveWatch(
  body: Uint8Array,
  options: { store: MemoryKvStore; watches: WatchRegistry; watchKeepaliveMs: number },
): Response {
  const { store, watches } = options;
  const keys = decodeWatch(body);
  const hexKeys = keys.map(toHex);
  let ended = false;
  let keepaliveDue = false;
  /** A watched key was written since the last frame (the first frame is always due). */
  let dirty = true;
  let wake: (() => void) | undefined;
  const poke = () => {
    wake?.();
    wake = undefined;
  };

  const unsubscribe = store.onChange((changed) => {
    if (hexKeys.some((hex) => changed.has(hex))) {
      dirty = true;
      poke();
    }
  });
  const keepalive = setInterval(() => {
    keepaliveDue = true;
    poke();
  }, options.watchKeepaliveMs);
  const end = () => {
    if (ended) return;
    ended = true;
    unsubscribe();
    clearInterval(keepalive);
    watches.delete(end);
    poke();
  };
  watches.add(end);

  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      while (!ended && !dirty && !keepaliveDue) {
        await new Promise<void>((resolve) => (wake = resolve));
      }
      if (ended) {
        controller.close();
        return;
      }
      if (dirty) {
        dirty = false;
        const outputs: WatchKeyOutput[] = keys.map((key) => ({
          changed: true,
          entry: store.get(key) ?? null,
        }));
        controller.enqueue(encodeWatchFrame(outputs));
      } else {
        controller.enqueue(WATCH_KEEPALIVE_FRAME);
      }
      keepaliveDue = false;
    },
    cancel: end,
  }, { highWaterMark: 0 });
  return new Response(stream, { headers: { "content-type": "application/octet-stream" } });
}
