// The durable side of POP, as RocketMQ keeps it in its revive topic: one checkpoint (CK)
// record per receive, naming each message handed out and the pop offsets the receive moved;
// and small records that settle handles — an ack, a "revived" (its time passed and the
// message went back) and a change of invisible time. Memory holds the live state
// (checkpoints.ts); recovery replays these records to rebuild it.
//
// Bodies are text: a CK is JSON ({ "g", "d", "r"?, "m": [[handle, topic, queue, offset,
// commitLogOffset]…], "p": [[topic, queue, nextOffset]…] }); the others are one letter and
// 32-character handles: "a" + handles, "r" + handles, "u" + handle + deadline.
import { REVIVE_TOPIC } from "../../storage/message/message_const.ts";
import type { PutResult } from "../../storage/store_types.ts";
import type { PopDeps } from "./pop_types.ts";

export const HANDLE_CHARS = 32;

/** One message of a CK: its handle and where it was read. */
export type CkItem = [handle: string, topic: string, queueId: number, offset: number, c: number];
/** A pop offset a receive moved: [topic, queueId, next offset]. */
export type PopAdvance = [topic: string, queueId: number, next: number];

export interface CkRecord {
  g: string;
  d: number;
  r?: 1;
  m: CkItem[];
  p: PopAdvance[];
}

export type PopLogRecord =
  | { kind: "ck"; ck: CkRecord }
  | { kind: "ack" | "revived"; handles: string[] }
  | { kind: "change"; handle: string; deadline: number };

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function appendCheckpoint(deps: PopDeps, ck: CkRecord): Promise<PutResult> {
  return append(deps, JSON.stringify(ck));
}

export function appendSettled(
  deps: PopDeps,
  kind: "ack" | "revived",
  handles: string[],
): Promise<PutResult> {
  return append(deps, (kind === "ack" ? "a" : "r") + handles.join(""));
}

export function appendChange(deps: PopDeps, handle: string, deadline: number): Promise<PutResult> {
  return append(deps, `u${handle}${deadline}`);
}

function append(deps: PopDeps, text: string): Promise<PutResult> {
  return deps.store.putMessage({
    topic: REVIVE_TOPIC,
    queueId: 0,
    body: encoder.encode(text),
    bornTimestamp: deps.nowMs(),
    bornHost: deps.storeHost,
    storeHost: deps.storeHost,
  });
}

/** A record of the revive topic, or undefined for one this code did not write. */
export function parsePopRecord(body: Uint8Array): PopLogRecord | undefined {
  const text = decoder.decode(body);
  switch (text[0]) {
    case "{": {
      try {
        const ck = JSON.parse(text);
        return typeof ck?.g === "string" && Array.isArray(ck.m) && Array.isArray(ck.p)
          ? { kind: "ck", ck }
          : undefined;
      } catch {
        return undefined;
      }
    }
    case "a":
    case "r": {
      const handles = [];
      for (let i = 1; i + HANDLE_CHARS <= text.length; i += HANDLE_CHARS) {
        handles.push(text.slice(i, i + HANDLE_CHARS));
      }
      return { kind: text[0] === "a" ? "ack" : "revived", handles };
    }
    case "u": {
      const deadline = Number(text.slice(1 + HANDLE_CHARS));
      return Number.isSafeInteger(deadline)
        ? { kind: "change", handle: text.slice(1, 1 + HANDLE_CHARS), deadline }
        : undefined;
    }
  }
  return undefined;
}
