// Telemetry, Heartbeat and NotifyClientTermination (reference/rocketmq-grpc.md §3, §5):
// the client's settings come in on its Telemetry stream; we answer each with the settings
// the clients need from a server (a producer's retry policy and largest body, a consumer
// group's FIFO flag, batch size and retry policy), and send them once more shortly after,
// since a Node client with several topics can miss the first answer (§3.7). A consumer's
// settings create its group if it has none (the proxy registers it), which the
// subscribe right allows over HTTP too.
import type * as grpc from "@grpc/grpc-js";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import type { Caller } from "./auth.ts";
import { answerStatus, refusalOf, type Req, type Res, unary } from "./calls.ts";
import type { GrpcDeps } from "./deps.ts";
import { ClientType } from "./sessions.ts";
import { Code, OK, status } from "./status.ts";
import { checkWriter } from "./transactions.ts";

/** When the settings answer is sent again (§3.7). */
const SETTINGS_REPEAT_MS = 1500;
/** A producer's send retries: the proxy's defaults (3 attempts, 10 ms × 2 up to 1 s). */
const PRODUCER_BACKOFF = {
  maxAttempts: 3,
  exponentialBackoff: { initial: { nanos: 10e6 }, max: { seconds: 1 }, multiplier: 2 },
};
const RECEIVE_BATCH_SIZE = 32;
const LONG_POLLING_DEFAULT = { seconds: 20 };

async function answerSettings(deps: GrpcDeps, settings: Req, caller: Caller): Promise<Res> {
  if (!caller.clientId) {
    throw new BrokerError("INVALID_PARAMETER", "Cannot accept settings: no x-mq-client-id");
  }
  const type = Number(settings.clientType ?? 0);
  if (settings.publishing) {
    const topics = (settings.publishing.topics ?? []) as Req[];
    for (const t of topics) {
      deps.auth.allow(caller, "publish", {
        topic: deps.names.inward(t, caller.namespace, "topic"),
      });
    }
    deps.sessions.set({ clientId: caller.clientId, clientType: type || ClientType.PRODUCER });
    return {
      ...settings,
      backoffPolicy: PRODUCER_BACKOFF,
      publishing: { topics, maxBodySize: deps.maxMessageSize, validateMessageType: true },
    };
  }
  if (settings.subscription) {
    const sub = settings.subscription;
    const group = deps.names.inward(sub.group, caller.namespace, "group");
    deps.auth.allow(caller, "subscribe", { group });
    for (const e of (sub.subscriptions ?? []) as Req[]) {
      const topic = deps.names.inward(e.topic, caller.namespace, "topic");
      deps.auth.allow(caller, "subscribe", { topic, group });
    }
    const view = await deps.api.call((b) => b.upsertGroup(group));
    deps.sessions.set({ clientId: caller.clientId, clientType: type, group });
    return {
      ...settings,
      backoffPolicy: {
        maxAttempts: view.retryMaxTimes + 1,
        exponentialBackoff: { initial: { seconds: 1 }, max: { seconds: 60 }, multiplier: 2 },
      },
      subscription: {
        ...sub,
        fifo: view.orderly,
        receiveBatchSize: RECEIVE_BATCH_SIZE,
        longPollingTimeout: sub.longPollingTimeout ?? LONG_POLLING_DEFAULT,
      },
    };
  }
  throw new BrokerError(
    "INVALID_PARAMETER",
    "Cannot accept settings without publishing or subscription",
  );
}

function telemetry(deps: GrpcDeps, open: Set<grpc.ServerDuplexStream<Req, Res>>) {
  return (call: grpc.ServerDuplexStream<Req, Res>) => {
    open.add(call);
    let repeat: ReturnType<typeof setTimeout> | undefined;
    let clientId = "";
    // A producer's session takes the transaction checks of its topics (transactions.ts).
    let checks: Promise<() => void> | undefined;
    let ended = false;
    const closed = () => {
      ended = true;
      clearTimeout(repeat);
      open.delete(call);
      checks?.then((unregister) => unregister(), () => {});
    };
    const callerP = deps.auth.caller(call.metadata);
    callerP.catch((err) => {
      const refusal = refusalOf(err);
      call.emit("error", refusal ?? { code: 13, details: "Cannot authenticate" });
    });
    call.on("data", (command: Req) => {
      if (command?.command !== "settings") return; // stack traces, verify results: nothing to do
      callerP.then(async (caller) => {
        clientId = caller.clientId;
        try {
          const settings = await answerSettings(deps, command.settings, caller);
          if (call.cancelled || call.writableEnded) return;
          if (settings.publishing && deps.transactions && checks === undefined && !ended) {
            const topics = ((command.settings.publishing.topics ?? []) as Req[]).map((t) =>
              deps.names.inward(t, caller.namespace, "topic")
            );
            const write = checkWriter(call, deps.names, caller.namespace, deps.storeHost);
            checks = deps.transactions.checksFor(topics, write);
            if (ended) checks.then((unregister) => unregister(), () => {});
          }
          call.write({ status: OK, settings });
          clearTimeout(repeat);
          repeat = setTimeout(() => {
            if (!call.cancelled && !call.writableEnded) call.write({ status: OK, settings });
          }, SETTINGS_REPEAT_MS);
        } catch (err) {
          const refusal = refusalOf(err);
          if (refusal) call.emit("error", refusal);
          else if (!call.writableEnded) {
            call.write({ status: answerStatus(deps, "Telemetry", err) });
          }
        }
      }, () => {});
    });
    call.on("end", () => {
      closed();
      if (!call.writableEnded) call.end();
    });
    call.on("cancelled", closed);
    call.on("error", () => closed());
    call.on("close", () => {
      closed();
      if (clientId) deps.sessions.drop(clientId);
      // Its auto_renew messages come back when their lease ends, as the proxy renews only
      // for clients it still hears from.
      if (clientId) deps.renewals?.releaseClient(clientId);
    });
  };
}

export function clientHandlers(deps: GrpcDeps, open: Set<grpc.ServerDuplexStream<Req, Res>>) {
  return {
    telemetry: telemetry(deps, open),
    heartbeat: unary(deps, "Heartbeat", (req: Req, caller): Promise<Res> => {
      if (!caller.clientId) {
        return Promise.resolve({ status: status(Code.CLIENT_ID_REQUIRED, "No x-mq-client-id") });
      }
      if (req.group?.name) {
        deps.auth.allow(caller, "subscribe", {
          group: deps.names.inward(req.group, caller.namespace, "group"),
        });
      }
      return Promise.resolve({ status: OK });
    }),
    notifyClientTermination: unary(
      deps,
      "NotifyClientTermination",
      (_req: Req, caller): Promise<Res> => {
        deps.sessions.drop(caller.clientId);
        deps.renewals?.releaseClient(caller.clientId);
        return Promise.resolve({ status: OK });
      },
    ),
  };
}
