// Transactional messages (docs/transactions.md): commit, rollback and state of a
// transaction begun with `Mq-Transaction: begin` on the produce route (produce.ts), and the
// check-back a producer group offers: a signed check URL, or a long poll.
import { createRoute, z } from "@hono/zod-openapi";
import type { TransactionApi } from "../../runtime/protocol/core_api.ts";
import type { TransactionDecision } from "../../runtime/protocol/transaction_types.ts";
import { readJson } from "./json_body.ts";
import { group as groupName, intText, text } from "./params.ts";
import {
  json,
  newRoutes,
  NO_CONTENT,
  REFUSALS,
  REFUSED,
  type RouteContext,
  type RouteDeps,
  type Routes,
  serve,
} from "./route.ts";
import { Message } from "./wire_schemas.ts";
import { transactionsOf } from "./transactions_of.ts";

const TAGS = ["transactions"];

const TransactionView = z.object({
  transactionId: z.string(),
  messageId: z.string(),
  topic: z.string(),
  queueId: z.int(),
  producerGroup: z.string(),
  state: z.enum(["PREPARED", "CHECKING", "COMMITTED", "ROLLED_BACK", "DISCARDED"]),
  checks: z.int().openapi({ description: "How many times the producer was asked" }),
  bornTimestamp: z.int(),
  decidedAt: z.int().optional(),
  message: Message.optional().openapi({ description: "The half message as stored" }),
}).openapi("TransactionView");

const TransactionCheck = z.object({
  transactionId: z.string(),
  messageId: z.string(),
  topic: z.string(),
  queueId: z.int(),
  producerGroup: z.string(),
  check: z.int().openapi({ description: "This check's number, 1 to transactionCheckMax" }),
  bornTimestamp: z.int(),
  message: Message,
}).openapi("TransactionCheck");

const CheckInput = z.object({
  url: z.string().openapi({ description: "Where the broker POSTs checks (SSRF-vetted)" }),
  secrets: z.array(z.string()).optional().openapi({
    description: "Standard Webhooks whsec_ secrets; one is generated when left out",
  }),
}).strict().openapi("TransactionCheckInput");

const CheckView = z.object({
  producerGroup: z.string(),
  url: z.string(),
  secrets: z.array(z.string()),
}).openapi("TransactionCheckView");

const idParams = z.object({
  transactionId: text.openapi({ description: "32 upper-case hex characters" }),
});
const groupParams = z.object({ group: groupName });

const decide = (decision: "commit" | "rollback") =>
  createRoute({
    method: "post",
    path: `/v1/transactions/{transactionId}/${decision}`,
    operationId: decision === "commit" ? "commitTransaction" : "rollbackTransaction",
    tags: TAGS,
    summary: decision === "commit"
      ? "Commit: deliver the half message with its id, keys and properties"
      : "Roll back: the half message is never delivered",
    request: { params: idParams },
    responses: {
      200: json("Decided (the same decision again answers the same)", TransactionView),
      ...REFUSALS,
      409: REFUSED[409],
    },
  });

const getTx = createRoute({
  method: "get",
  path: "/v1/transactions/{transactionId}",
  operationId: "getTransaction",
  tags: TAGS,
  summary: "A transaction's state, its checks and its half message",
  request: { params: idParams },
  responses: { 200: json("The transaction", TransactionView), ...REFUSALS },
});

const checkPath = "/v1/producer-groups/{group}/transaction-check";

const putCheck = createRoute({
  method: "put",
  path: checkPath,
  operationId: "putTransactionCheck",
  tags: TAGS,
  summary: "Register the URL the broker asks about undecided transactions of this group",
  description: "The broker POSTs a TransactionCheck, signed as Standard Webhooks " +
    "(webhook-id, webhook-timestamp, webhook-signature); answer 200 " +
    '{"decision":"COMMIT"|"ROLLBACK"|"UNKNOWN"}.',
  request: {
    params: groupParams,
    body: { required: true, content: { "application/json": { schema: CheckInput } } },
  },
  responses: { 200: json("Registered; secrets in full this once", CheckView), ...REFUSALS },
});

const getCheck = createRoute({
  method: "get",
  path: checkPath,
  operationId: "getTransactionCheck",
  tags: TAGS,
  summary: "The group's check URL (secrets masked)",
  request: { params: groupParams },
  responses: { 200: json("The check URL", CheckView), ...REFUSALS },
});

const deleteCheck = createRoute({
  method: "delete",
  path: checkPath,
  operationId: "deleteTransactionCheck",
  tags: TAGS,
  summary: "Stop calling the group's check URL (checks go to the long poll)",
  request: { params: groupParams },
  responses: { 204: NO_CONTENT, ...REFUSALS },
});

const listChecks = createRoute({
  method: "get",
  path: "/v1/transaction-checks",
  operationId: "listTransactionChecks",
  tags: TAGS,
  summary: "Every producer group's check URL (admin)",
  request: {
    query: z.object({
      revealSecrets: z.enum(["true", "false"]).optional().openapi({
        description: "true: secrets in full (the cluster router copies them to a joining group)",
      }),
    }),
  },
  responses: {
    200: json(
      "The check URLs by producer group",
      z.object({ checks: z.array(CheckView) }).openapi("TransactionChecks"),
    ),
    ...REFUSALS,
  },
});

const pollQuery = {
  waitMs: intText("waitMs").openapi({ description: "Longest wait for a check (ms)" }),
  max: intText("max", 256).openapi({ description: "Most checks in the answer (default 16)" }),
};

const poll = createRoute({
  method: "get",
  path: "/v1/producer-groups/{group}/transaction-checks",
  operationId: "pollTransactionChecks",
  tags: TAGS,
  summary: "Long poll for checks of this group",
  description: "For producers that cannot take inbound calls. Answer each check with " +
    "POST /v1/transactions/{transactionId}/commit or /rollback; not answering is UNKNOWN " +
    "(it is asked again after transactionCheckIntervalMs).",
  request: { params: groupParams, query: z.object(pollQuery) },
  responses: {
    200: json("Checks, possibly none", z.object({ checks: z.array(TransactionCheck) })),
    ...REFUSALS,
  },
});

export function transactionRoutes(deps: RouteDeps<unknown>): Routes {
  const { api, allow, permits } = deps;
  const app = newRoutes();
  const call = <T>(f: (tx: TransactionApi) => Promise<T>) => api.call((b) => f(transactionsOf(b)));

  /** A key that may publish to some topics only must hold the transaction's topic; a key
   * that may publish anywhere (or an open API) costs no lookup. */
  const allowTransaction = (c: RouteContext, id: string): Promise<void> | undefined => {
    allow(c, "publish");
    if (permits(c, "publish", { topic: "*" })) return undefined;
    return call((tx) => tx.getTransaction(id)).then((view) => {
      allow(c, "publish", { topic: view.topic });
    });
  };

  const end = (decision: TransactionDecision) => async (c: RouteContext) => {
    const id = c.req.param("transactionId")!;
    const allowed = allowTransaction(c, id);
    if (allowed !== undefined) await allowed;
    const broker = await api.get();
    try {
      return c.json(await transactionsOf(broker).endTransaction(id, decision), 200);
    } catch (err) {
      api.failed(broker, err);
      throw err;
    }
  };
  serve(app, decide("commit"), end("COMMIT"));
  serve(app, decide("rollback"), end("ROLLBACK"));

  serve(app, getTx, async (c) => {
    const id = c.req.param("transactionId")!;
    await allowTransaction(c, id);
    return c.json(await call((tx) => tx.getTransaction(id)), 200);
  });

  serve(app, putCheck, async (c) => {
    const group = groupName.parse(c.req.param("group")!);
    allow(c, "publish", { group });
    const input = await readJson(c, deps, CheckInput, { field: "transaction check field" });
    return c.json(await call((tx) => tx.setTransactionCheck(group, input)), 200);
  });

  serve(app, getCheck, async (c) => {
    const group = groupName.parse(c.req.param("group")!);
    allow(c, "publish", { group });
    return c.json(await call((tx) => tx.getTransactionCheck(group)), 200);
  });

  serve(app, deleteCheck, async (c) => {
    const group = groupName.parse(c.req.param("group")!);
    allow(c, "publish", { group });
    await call((tx) => tx.deleteTransactionCheck(group));
    return c.body(null, 204);
  });

  serve(app, listChecks, async (c) => {
    allow(c, "admin");
    const revealSecrets = c.req.query("revealSecrets") === "true";
    return c.json({ checks: await call((tx) => tx.listTransactionChecks({ revealSecrets })) }, 200);
  });

  serve(app, poll, async (c) => {
    const group = groupName.parse(c.req.param("group")!);
    allow(c, "publish", { group });
    const waitMs = pollQuery.waitMs.parse(c.req.query("waitMs"));
    const max = pollQuery.max.parse(c.req.query("max"));
    const checks = await call((tx) =>
      tx.pollTransactionChecks(group, { waitMs, max }, () => c.req.raw.signal)
    );
    return c.json({ checks }, 200);
  });

  return app;
}
