// The hot path, a single produce: the raw body is the message body. Apart from the route's
// declaration (produce.ts, zod): the entry files serve it before zod loads (app.ts, lazy).
import type { ProducerApi } from "../../runtime/protocol/core_api.ts";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import { checkGroup, checkUserTopic } from "../../runtime/protocol/names.ts";
import type { ProduceMessage, ProduceResult } from "../../runtime/protocol/types.ts";
import { readBody } from "../body.ts";
import { messageFromHeaders, type ProduceHeaders, readProduceHeaders } from "../produce_input.ts";
import { transactionsOf } from "./transactions_of.ts";
import type { RouteContext, RouteDeps } from "./route.ts";

/** Where it is served; the OpenAPI path is /v1/topics/{topic}/messages. */
export const PRODUCE_PATH = "/v1/topics/:topic/messages";

/** The handler of POST PRODUCE_PATH. */
export function produceOne(
  deps: RouteDeps<Pick<ProducerApi, "produce" | "produceBatch">>,
): (c: RouteContext) => Promise<Response> {
  const { api, allow, limits, deadlines } = deps;
  // checkUserTopic is userTopic's check, called directly (no schema parse),
  // and the headers are read in one pass (produce_input.ts).
  return async (c: RouteContext) => {
    const topic = checkUserTopic(c.req.param("topic")!);
    allow(c, "publish", { topic });
    const headers = readProduceHeaders(c.req.raw.headers);
    const body = await readBody(c.req.raw, limits.maxMessageSize, deadlines, headers.contentLength);
    const message = messageFromHeaders(headers, body, limits);
    if (headers.found["mq-transaction"] !== undefined) {
      return c.json(await beginTransaction(api, topic, message, headers.found), 201);
    }
    // api.call() inlined: the hottest route skips its async frame and closure.
    const broker = await api.get();
    let result: ProduceResult;
    try {
      result = await broker.produce(topic, message);
    } catch (err) {
      api.failed(broker, err);
      throw err;
    }
    if (result.idempotentReplay) return c.json(result, 200, { "idempotent-replayed": "true" });
    return c.json(result, 201);
  };
}

/** `Mq-Transaction: begin`: the message is stored as a half message (transactions.ts). */
function beginTransaction(
  api: RouteDeps<unknown>["api"],
  topic: string,
  message: ProduceMessage,
  found: ProduceHeaders["found"],
) {
  if (found["mq-transaction"] !== "begin") {
    throw new BrokerError("INVALID_HEADER", "Cannot read Mq-Transaction: the one value is begin");
  }
  const group = found["mq-producer-group"];
  if (group === undefined) {
    throw new BrokerError(
      "INVALID_HEADER",
      "Cannot begin a transaction without Mq-Producer-Group: the group is asked when it stays undecided",
    );
  }
  return api.call((b) => transactionsOf(b).beginTransaction(topic, message, checkGroup(group)));
}
