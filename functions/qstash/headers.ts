// The Upstash-* headers of a publish, enqueue, batch entry or schedule, read into what we
// store (docs/qstash.md has the table). Every header we do not carry out is refused with a
// 400 that names it: a silently ignored setting would change delivery without a word.
import { BrokerError } from "../../runtime/protocol/errors.ts";

export interface QstashOptions {
  /** Upstash-Forward-* without the prefix, delivered as headers. */
  forward: Record<string, string>;
  contentType?: string;
  delayMs?: number;
  /** Epoch ms (Upstash-Not-Before wins over Upstash-Delay). */
  notBefore?: number;
  retries?: number;
  /** The delivery's method, when not POST. */
  method?: string;
  /** Per attempt (Upstash-Timeout). */
  timeoutMs?: number;
  callback?: string;
  failureCallback?: string;
  deduplicationId?: string;
  contentBasedDeduplication: boolean;
  /** Schedules only. */
  cron?: string;
  queueName?: string;
  label?: string;
  /** Upstash-Flow-Control-Key and -Value. */
  flowControl?: FlowControl;
}

export interface FlowControl {
  key: string;
  parallelism?: number;
  rate?: number;
  periodMs: number;
}

const IGNORED = /^upstash-telemetry-/;
const METHODS = ["POST", "PUT", "PATCH", "DELETE", "GET"];
/** Headers the HTTP layer or the broker owns on a delivery. */
const NOT_FORWARDED = new Set([
  "host",
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "upgrade",
  "expect",
  "te",
  "trailer",
  "user-agent",
  "content-type",
]);
const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

const bad = (header: string, why: string) => new BrokerError("INVALID_HEADER", `${header}: ${why}`);

/** Reads `headers` (names any case); `kind` says which headers apply. */
export function parseQstashHeaders(
  headers: Iterable<[string, string]>,
  kind: "publish" | "schedule",
  retriesMax: number,
): QstashOptions {
  const o: QstashOptions = { forward: {}, contentBasedDeduplication: false };
  let flowKey: string | undefined;
  let flowValue: string | undefined;
  for (const [raw, value] of headers) {
    const name = raw.toLowerCase();
    if (name === "content-type") {
      o.contentType = value;
      continue;
    }
    if (!name.startsWith("upstash-") || IGNORED.test(name)) continue;
    if (name.startsWith("upstash-forward-")) {
      const to = name.slice("upstash-forward-".length);
      if (to === "" || NOT_FORWARDED.has(to)) {
        throw bad(raw, "the broker sets this header itself");
      }
      o.forward[to] = value;
      continue;
    }
    switch (name) {
      case "upstash-method": {
        const method = value.toUpperCase();
        if (!METHODS.includes(method)) {
          throw bad("Upstash-Method", `one of ${METHODS.join(", ")}, not ${value}`);
        }
        if (method !== "POST") o.method = method;
        break;
      }
      case "upstash-delay":
        if (kind === "schedule") throw unsupported(`${raw} on a schedule`);
        o.delayMs = duration("Upstash-Delay", value);
        break;
      case "upstash-not-before":
        if (kind === "schedule") throw unsupported(raw);
        if (!/^\d{1,12}$/.test(value)) throw bad("Upstash-Not-Before", "unix seconds expected");
        o.notBefore = Number(value) * 1000;
        break;
      case "upstash-retries":
        if (!/^\d{1,4}$/.test(value) || Number(value) > retriesMax) {
          throw bad("Upstash-Retries", `an integer from 0 to ${retriesMax} (qstashRetriesMax)`);
        }
        o.retries = Number(value);
        break;
      case "upstash-timeout":
        o.timeoutMs = duration("Upstash-Timeout", value);
        break;
      case "upstash-callback":
        o.callback = value;
        break;
      case "upstash-failure-callback":
        o.failureCallback = value;
        break;
      case "upstash-deduplication-id":
        if (kind === "schedule") throw unsupported(raw);
        if (value === "" || value.length > 512) throw bad(raw, "1-512 characters");
        o.deduplicationId = value;
        break;
      case "upstash-content-based-deduplication":
        if (kind === "schedule") throw unsupported(raw);
        o.contentBasedDeduplication = value === "true";
        break;
      case "upstash-cron":
        if (kind !== "schedule") throw unsupported(raw);
        o.cron = value;
        break;
      case "upstash-queue-name":
        if (kind !== "schedule") throw unsupported(raw);
        o.queueName = value;
        break;
      case "upstash-label":
        o.label = value;
        break;
      case "upstash-flow-control-key":
        flowKey = value;
        break;
      case "upstash-flow-control-value":
        flowValue = value;
        break;
      default:
        throw unsupported(raw);
    }
  }
  if (flowKey !== undefined || flowValue !== undefined) {
    o.flowControl = flowControl(flowKey, flowValue ?? "");
  }
  return o;
}

/** `parallelism=P, rate=R, period=D` (spaces optional; at least one of P and R). */
function flowControl(key: string | undefined, value: string): FlowControl {
  const header = "Upstash-Flow-Control-Value";
  if (!key) throw bad("Upstash-Flow-Control-Key", "required with Upstash-Flow-Control-Value");
  const fc: FlowControl = { key, periodMs: 1000 };
  for (const part of value.split(",").map((p) => p.trim()).filter((p) => p !== "")) {
    const [name, v] = part.split("=").map((x) => x.trim());
    if (name === "parallelism" || name === "rate") {
      if (!/^\d{1,6}$/.test(v ?? "") || Number(v) < 1) throw bad(header, `${name} must be >= 1`);
      fc[name] = Number(v);
    } else if (name === "period") fc.periodMs = duration(header, v ?? "");
    else throw bad(header, `unknown setting ${JSON.stringify(name)}`);
  }
  if (fc.parallelism === undefined && fc.rate === undefined) {
    throw bad(header, "name parallelism, rate or both");
  }
  return fc;
}

function unsupported(header: string): BrokerError {
  return new BrokerError(
    "INVALID_HEADER",
    `${header} is not supported by this broker's QStash API (docs/qstash.md lists what is)`,
  );
}

/** `10s`, `5m`, `1d10h30m` or a bare number of seconds, as ms. */
export function duration(header: string, value: string): number {
  if (/^\d{1,10}$/.test(value)) return Number(value) * 1000;
  const parts = value.match(/\d+[smhd]/g);
  if (!parts || parts.join("") !== value) {
    throw bad(header, `${JSON.stringify(value)} is not a duration like 10s, 5m or 1d10h30m`);
  }
  return parts.reduce((ms, p) => ms + Number(p.slice(0, -1)) * UNITS[p.at(-1)!], 0);
}
