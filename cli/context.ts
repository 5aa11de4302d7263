// What every command shares: the connection flags (--url, --token, or EDGEMQ_URL and
// EDGEMQ_TOKEN), --json, the SDK client and the operations routes, and how output and
// errors are printed.
import process from "node:process";
import { BrokerError, MqClient } from "../client/mod.ts";
import { AdminHttp } from "./admin_http.ts";
import { table } from "./table.ts";

export const DEFAULT_URL = "http://127.0.0.1:8080";

/** Flags every command takes. */
export const common = {
  url: {
    type: "string",
    description: `Broker or functions URL (env EDGEMQ_URL, default ${DEFAULT_URL})`,
  },
  token: { type: "string", description: "API key (env EDGEMQ_TOKEN)" },
  json: { type: "boolean", description: "Print JSON for scripts instead of tables" },
} as const;

export interface CommonArgs {
  url?: string;
  token?: string;
  json?: boolean;
}

export interface Ctx {
  url: string;
  token: string | undefined;
  json: boolean;
  mq: MqClient;
  admin: AdminHttp;
  /** Prints `value` as JSON, or with `human` as text. */
  out<T>(value: T, human: (value: T) => string): void;
  /** Prints rows as a table (or the rows as JSON). */
  rows<T>(rows: T[], columns: Array<[string, (row: T) => unknown]>, jsonValue?: unknown): void;
  /** A progress line on stderr, when stderr is a terminal and output is not JSON. */
  progress(text: string): void;
}

export function context(args: CommonArgs): Ctx {
  const url = (args.url || process.env.EDGEMQ_URL || DEFAULT_URL).replace(/\/$/, "");
  const token = args.token || process.env.EDGEMQ_TOKEN || undefined;
  const json = args.json === true;
  const write = (text: string) => process.stdout.write(text.endsWith("\n") ? text : text + "\n");
  return {
    url,
    token,
    json,
    mq: new MqClient({ baseUrl: url, token }),
    admin: new AdminHttp(url, token),
    out: (value, human) => write(json ? JSON.stringify(value, null, 2) : human(value)),
    rows: (rows, columns, jsonValue) =>
      write(json ? JSON.stringify(jsonValue ?? rows, null, 2) : table(rows, columns)),
    progress: (text) => {
      if (!json && process.stderr.isTTY) process.stderr.write(`\r${text}\x1b[K`);
    },
  };
}

/** Runs a command body, printing a broker refusal as one line and exiting 1. */
export async function guarded(body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (err) {
    if (err instanceof BrokerError) {
      process.stderr.write(`error: ${err.message} (${err.code})\n`);
    } else if (err instanceof UsageError) {
      process.stderr.write(`error: ${err.message}\n`);
      process.exit(2);
    } else {
      process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    }
    process.exit(1);
  }
}

export class UsageError extends Error {}

/** A time given as epoch milliseconds, an ISO date, or relative ("-15m", "-2h", "-1d"). */
export function parseTime(text: string, now = Date.now()): number {
  if (/^\d+$/.test(text)) return Number(text);
  const rel = /^-(\d+)(s|m|h|d)$/.exec(text);
  if (rel) {
    const unit = { s: 1e3, m: 6e4, h: 36e5, d: 864e5 }[rel[2] as "s"];
    return now - Number(rel[1]) * unit;
  }
  const t = Date.parse(text);
  if (Number.isNaN(t)) {
    throw new UsageError(`Cannot read time ${text}: give epoch ms, ISO 8601, or -15m/-2h/-1d`);
  }
  return t;
}

export function isoTime(ms: number | null | undefined): string {
  return ms ? new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z") : "-";
}
