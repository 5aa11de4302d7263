// The offset and pull RPCs of newer clients (PullConsumer): GetOffset, UpdateOffset,
// QueryOffset and PullMessage, over ConsumerApi's offsets and pull-by-offset. The same
// offsets the HTTP API reads and commits (GET/PUT /v1/groups/{group}/offsets/...).
import type { Caller } from "./auth.ts";
import { cancelSignal, msLeft, type Req, type Res, serverStream, unary } from "./calls.ts";
import type { GrpcDeps } from "./deps.ts";
import { tagsOf, tagsText } from "./filter.ts";
import { encodeDelivered } from "./delivered_wire.ts";
import { toMs } from "./message.ts";
import { Code, OK, status } from "./status.ts";
import { storeQueueId } from "./route.ts";

const QueryOffsetPolicy = { BEGINNING: 0, END: 1, TIMESTAMP: 2 } as const;
const PULL_BATCH_DEFAULT = 32;
const DEADLINE_MARGIN_MS = 500;

/** The request's topic and the core's id of its (broker, queue) (route.ts). */
async function queueOf(deps: GrpcDeps, req: Req, caller: Caller, group?: string) {
  const topic = deps.names.inward(req.messageQueue?.topic, caller.namespace, "topic");
  deps.auth.allow(caller, "subscribe", group === undefined ? { topic } : { topic, group });
  const queueId = await deps.api.call((b) => storeQueueId(b, topic, req.messageQueue));
  return { topic, queueId };
}

async function groupQueueOf(deps: GrpcDeps, req: Req, caller: Caller) {
  const group = deps.names.inward(req.group, caller.namespace, "group");
  return { group, ...await queueOf(deps, req, caller, group) };
}

export function offsetHandlers(deps: GrpcDeps) {
  return {
    getOffset: unary(deps, "GetOffset", async (req: Req, caller): Promise<Res> => {
      const { group, topic, queueId } = await groupQueueOf(deps, req, caller);
      const info = await deps.api.call((b) => b.getOffset(group, topic, queueId));
      if (info.offset < 0) {
        return {
          status: status(Code.OFFSET_NOT_FOUND, `No offset of ${group} for ${topic} ${queueId}`),
        };
      }
      return { status: OK, offset: info.offset };
    }),
    updateOffset: unary(deps, "UpdateOffset", async (req: Req, caller): Promise<Res> => {
      const { group, topic, queueId } = await groupQueueOf(deps, req, caller);
      await deps.api.call((b) => b.commitOffset(group, topic, queueId, Number(req.offset ?? 0)));
      return { status: OK };
    }),
    queryOffset: unary(deps, "QueryOffset", async (req: Req, caller): Promise<Res> => {
      const { topic, queueId } = await queueOf(deps, req, caller);
      const policy = Number(req.queryOffsetPolicy ?? 0);
      if (policy === QueryOffsetPolicy.TIMESTAMP) {
        // The core's time index, where the broker runs in this process (RecordApi).
        await deps.api.get(); // refused like every call while the broker recovers
        const records = deps.records?.();
        if (!records) {
          return {
            status: status(
              Code.UNSUPPORTED,
              "Cannot query an offset by timestamp here: the broker is not in this process",
            ),
          };
        }
        const ms = toMs(req.timestamp);
        if (ms === undefined) {
          return {
            status: status(Code.BAD_REQUEST, "Cannot query an offset by timestamp: no timestamp"),
          };
        }
        return { status: OK, offset: await records.offsetByTime(topic, queueId, ms) };
      }
      // A pull that reads nothing tells the queue's bounds.
      const r = await deps.api.call((b) =>
        b.pull(topic, queueId, { offset: 0, max: 1, waitMs: 0 })
      );
      return { status: OK, offset: policy === QueryOffsetPolicy.END ? r.maxOffset : r.minOffset };
    }),
    pullMessage: serverStream(deps, "PullMessage", async (req: Req, caller, call) => {
      const { topic, queueId } = await groupQueueOf(deps, req, caller);
      const tags = tagsText(tagsOf(req.filterExpression));
      const left = msLeft(call, deps.nowMs()) - DEADLINE_MARGIN_MS;
      const waitMs = Math.max(
        0,
        Math.min(toMs(req.longPollingTimeout) ?? 0, deps.pullWaitMsMax, left),
      );
      const r = await deps.api.call((b) =>
        b.pull(topic, queueId, {
          offset: Number(req.offset ?? 0),
          max: req.batchSize > 0 ? req.batchSize : PULL_BATCH_DEFAULT,
          waitMs,
          tags,
        }, () => cancelSignal(call))
      );
      call.write({
        status: r.messages.length > 0
          ? OK
          : status(Code.MESSAGE_NOT_FOUND, `No new message (${r.status})`),
      });
      for (const m of r.messages) {
        call.write(encodeDelivered(m, deps.names, caller.namespace, deps.storeHost));
      }
      call.write({ nextOffset: r.nextOffset });
    }),
  };
}
