// One remoting role's connections (NameServer or broker): frames in, a handler per
// request, responses out with the request's opaque. The entry file owns the listener (the
// platform's TCP seam) and hands each accepted socket to accept().
//
// Bounds: a malformed frame (bad length, bad header) closes its connection with a log line;
// a connection silent for idleTimeoutMs with nothing in flight is closed; at most
// connectionsMax connections and inFlightMax requests per connection (more are answered
// SYSTEM_BUSY). A handler that throws answers SYSTEM_ERROR (or the code of a BrokerError):
// nothing a peer sends can crash or hang the process.
import { BrokerError } from "../../runtime/protocol/errors.ts";
import {
  decodeCommand,
  encodeCommand,
  FrameDecoder,
  FrameError,
  isOneway,
  isResponse,
  type RemotingCommand,
  responseTo,
} from "./codec.ts";
import { ResponseCode, responseCodeOf } from "./codes.ts";

/** What a listener hands over: node:net's Socket fits, on Deno and Bun. */
export interface RemotingSocket {
  on(event: "data", listener: (chunk: Uint8Array) => void): unknown;
  on(event: "close", listener: () => void): unknown;
  on(event: "error", listener: (err: Error) => void): unknown;
  write(data: Uint8Array): boolean;
  destroy(): void;
  setTimeout?(ms: number, listener?: () => void): unknown;
  setNoDelay?(noDelay?: boolean): unknown;
  remoteAddress?: string;
  remotePort?: number;
}

export type RemotingLog = (
  level: "debug" | "info" | "warn" | "error",
  msg: string,
  fields?: Record<string, unknown>,
) => void;

/** A live client connection, as handlers see it. */
export interface Connection {
  readonly id: number;
  /** host:port of the peer. */
  readonly address: string;
  /** Aborted when the connection closes: held pulls stop waiting. */
  readonly signal: AbortSignal;
  /** A request from us to the client (NOTIFY_CONSUMER_IDS_CHANGED, oneway). */
  send(command: RemotingCommand): void;
}

/** Answers one request; undefined for no answer (oneway handled). */
export type RequestHandler = (
  request: RemotingCommand,
  connection: Connection,
) => Promise<RemotingCommand | undefined> | RemotingCommand | undefined;

export interface RemotingServerOptions {
  /** "namesrv" or "broker", in log lines. */
  role: string;
  handler: RequestHandler;
  log: RemotingLog;
  frameBytesMax: number;
  idleTimeoutMs: number;
  connectionsMax: number;
  inFlightMax: number;
  /** Told when a connection closes (membership of its clients). */
  onClose?: (connection: Connection) => void;
}

export class RemotingServer {
  readonly #o: RemotingServerOptions;
  readonly #open = new Map<number, { socket: RemotingSocket; abort: AbortController }>();
  #nextId = 1;

  constructor(options: RemotingServerOptions) {
    this.#o = options;
  }

  get connections(): number {
    return this.#open.size;
  }

  accept(socket: RemotingSocket): void {
    const o = this.#o;
    if (this.#open.size >= o.connectionsMax) {
      o.log("warn", "remoting connection refused: remotingConnectionsMax reached", {
        role: o.role,
        connectionsMax: o.connectionsMax,
      });
      socket.destroy();
      return;
    }
    const id = this.#nextId++;
    const abort = new AbortController();
    const address = `${socket.remoteAddress ?? "?"}:${socket.remotePort ?? 0}`;
    const decoder = new FrameDecoder(o.frameBytesMax);
    let inFlight = 0;
    let closed = false;
    const write = (cmd: RemotingCommand) => {
      if (!closed) socket.write(encodeCommand(cmd));
    };
    const conn: Connection = { id, address, signal: abort.signal, send: write };
    const close = (why?: string, fields?: Record<string, unknown>) => {
      if (closed) return;
      if (why) o.log("warn", why, { role: o.role, peer: address, ...fields });
      closed = true;
      socket.destroy();
    };
    this.#open.set(id, { socket, abort });
    socket.setNoDelay?.(true);
    socket.setTimeout?.(o.idleTimeoutMs, () => {
      if (inFlight === 0) close("remoting connection idle; closing", { idleMs: o.idleTimeoutMs });
    });
    socket.on("error", () => close());
    socket.on("close", () => {
      closed = true;
      this.#open.delete(id);
      abort.abort();
      o.onClose?.(conn);
    });
    socket.on("data", (chunk) => {
      if (closed) return;
      let frames: Uint8Array[];
      try {
        frames = decoder.push(chunk);
      } catch (err) {
        return close("remoting frame refused; closing connection", { error: String(err) });
      }
      for (const frame of frames) {
        let request: RemotingCommand;
        try {
          request = decodeCommand(frame);
        } catch (err) {
          if (!(err instanceof FrameError)) throw err;
          return close("remoting frame refused; closing connection", { error: err.message });
        }
        if (isResponse(request)) continue; // answers to our oneway notices: none expected
        if (inFlight >= o.inFlightMax) {
          if (!isOneway(request)) {
            write(
              responseTo(
                request,
                ResponseCode.SYSTEM_BUSY,
                "Too many requests in flight on this connection (remotingInFlightMax)",
              ),
            );
          }
          continue;
        }
        inFlight++;
        this.#run(request, conn).then((response) => {
          inFlight--;
          if (response && !isOneway(request)) write(response);
        });
      }
    });
  }

  /** The handler's answer, or the error it threw as a response; never rejects. */
  async #run(request: RemotingCommand, conn: Connection): Promise<RemotingCommand | undefined> {
    try {
      return await this.#o.handler(request, conn);
    } catch (err) {
      if (err instanceof BrokerError) return responseTo(request, responseCodeOf(err), err.message);
      this.#o.log("error", "remoting request failed", {
        role: this.#o.role,
        code: request.code,
        error: String((err as Error)?.stack ?? err),
      });
      return responseTo(
        request,
        ResponseCode.SYSTEM_ERROR,
        `Cannot handle request ${request.code}: ${String((err as Error)?.message ?? err)}`,
      );
    }
  }

  /** Closes every connection (shutdown); held requests see their signal abort. */
  closeAll(): void {
    for (const { socket, abort } of this.#open.values()) {
      abort.abort();
      socket.destroy();
    }
    this.#open.clear();
  }
}
