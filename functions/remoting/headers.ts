// Reading custom header fields (extFields) of a request, and building responses. Pure.
import { BrokerError } from "../../runtime/protocol/errors.ts";
import type {
  BrokerClient,
  RecordApi,
  TransactionApi,
  TransactionCheckHost,
} from "../../runtime/protocol/core_api.ts";
import { type RemotingCommand, responseTo } from "./codec.ts";
import { ResponseCode } from "./codes.ts";

/** What the broker role calls: the core API and the record calls remoting needs. */
export type RemotingCore = BrokerClient & RecordApi & TransactionApi & TransactionCheckHost;

export function text(req: RemotingCommand, name: string): string {
  const v = req.extFields[name];
  if (v === undefined || v === "") {
    throw new BrokerError(
      "INVALID_PARAMETER",
      `Cannot handle request ${req.code}: header field ${name} is missing`,
    );
  }
  return v;
}

export function optionalText(req: RemotingCommand, name: string): string | undefined {
  const v = req.extFields[name];
  return v === undefined || v === "" || v === "null" ? undefined : v;
}

export function int(req: RemotingCommand, name: string): number {
  const v = text(req, name);
  if (!/^-?\d{1,19}$/.test(v) || !Number.isSafeInteger(Number(v))) {
    throw new BrokerError(
      "INVALID_PARAMETER",
      `Cannot handle request ${req.code}: header field ${name} is not an integer: ${
        JSON.stringify(v.slice(0, 40))
      }`,
    );
  }
  return Number(v);
}

export function optionalInt(req: RemotingCommand, name: string): number | undefined {
  return optionalText(req, name) === undefined ? undefined : int(req, name);
}

export function ok(
  req: RemotingCommand,
  fields: Record<string, string | number> = {},
  body?: Uint8Array,
): RemotingCommand {
  const ext: Record<string, string> = {};
  for (const k in fields) ext[k] = String(fields[k]);
  return responseTo(req, ResponseCode.SUCCESS, undefined, ext, body);
}

const encoder = new TextEncoder();
export function jsonBody(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

export function parseJsonBody<T>(req: RemotingCommand): T {
  try {
    return JSON.parse(new TextDecoder().decode(req.body ?? new Uint8Array()));
  } catch {
    throw new BrokerError(
      "INVALID_JSON",
      `Cannot handle request ${req.code}: its body is not valid JSON`,
    );
  }
}
