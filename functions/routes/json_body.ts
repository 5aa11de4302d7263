// JSON request bodies: read with a byte limit and the body deadline (body.ts), then parsed
// with the route's schema, the one the document shows. A refusal is INVALID_PARAMETER
// saying which field and why, or INVALID_JSON when the bytes are not a JSON object.
import type { z } from "@hono/zod-openapi";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import { readBody } from "../body.ts";
import type { RouteContext, RouteDeps } from "./route.ts";

/** Small admin bodies: 64 KiB is plenty and bounds the JSON parser. */
export const ADMIN_BODY_BYTES_MAX = 64 * 1024;

export interface BodyWords {
  /** What a field is called in "Unknown <field> x": "topic setting", "receive field". */
  field: string;
  /** The detail for any other problem; by default "<path>: <zod's message>". */
  usage?: (path: string) => string;
}

export async function readJson<S extends z.ZodType>(
  c: RouteContext,
  deps: Pick<RouteDeps<unknown>, "deadlines">,
  schema: S,
  words: BodyWords,
): Promise<z.output<S>> {
  const value = parseJson(await readBody(c.req.raw, ADMIN_BODY_BYTES_MAX, deps.deadlines));
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new BrokerError("INVALID_JSON", "Cannot read body: expected a JSON object");
  }
  return checkJson(schema, value, words);
}

/** `value` parsed by `schema`, or the first problem as INVALID_PARAMETER. */
export function checkJson<S extends z.ZodType>(
  schema: S,
  value: unknown,
  words: BodyWords,
): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  if (issue.code === "unrecognized_keys") {
    throw new BrokerError("INVALID_PARAMETER", `Unknown ${words.field} ${issue.keys[0]}`);
  }
  const path = issue.path.join(".") || "body";
  throw new BrokerError(
    "INVALID_PARAMETER",
    words.usage?.(path) ?? `Cannot read ${words.field}s: ${path}: ${issue.message}`,
  );
}

export function parseJson(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw new BrokerError("INVALID_JSON", "Cannot parse the request body as UTF-8 JSON");
  }
}
