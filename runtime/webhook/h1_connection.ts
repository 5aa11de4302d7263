// One keep-alive connection of the webhook client: writes a request and parses its
// response with a small state machine (Phase), under the head, line and body caps.
import { Buffer } from "node:buffer";
import type net from "node:net";
import {
  classify,
  KEPT_HEADER_CHARS_MAX,
  KEPT_HEADERS,
  type KeptHeaderName,
} from "./http_delivery.ts";
import type { Attempt } from "./h1_attempt.ts";
import type { Settings } from "./h1_settings.ts";
import { CHUNK_LINE_BYTES_MAX, headEnd, lineEnd } from "./h1_wire.ts";

/** What a connection asks of its pool (h1_pool.ts's Pool). */
export interface ConnectionPool {
  readonly settings: Settings;
  /** The response is complete and the connection may carry another request. */
  release(connection: Connection): void;
  /** The connection is gone. */
  forget(connection: Connection): void;
  /** `attempt` again on a new connection (the reused one was stale). */
  redial(attempt: Attempt): void;
}

const enum Phase {
  /** Reading the status line and headers. */
  Head,
  /** Reading `remaining` bytes of a Content-Length body. */
  Length,
  /** Reading a chunk-size line. */
  ChunkSize,
  /** Reading `remaining` bytes of chunk data. */
  ChunkData,
  /** Reading the CRLF after chunk data. */
  ChunkEnd,
  /** Reading trailer lines up to the empty one. */
  Trailers,
  /** Reading until the server closes (no length, no chunking). */
  UntilClose,
}

/** One keep-alive connection: writes one request at a time and parses its response. */
export class Connection {
  requests = 0;
  idleSince = 0;
  #attempt: Attempt | undefined;
  #phase = Phase.Head;
  #remaining = 0;
  #keepAlive = true;
  /** Bytes of an unfinished head or line (#gather), and how many are used. */
  #partial: Buffer | undefined;
  #partialLength = 0;
  /** Head bytes of this response so far, 1xx heads included. */
  #headBytes = 0;
  /** Bytes received since the current request was written. */
  #received = 0;
  readonly #closed: Promise<void>;
  #gone = false;
  /** Set when a response completes inside #onData. */
  #completed = false;

  /** The attempt this connection was dialled for, until it connects. */
  #dialFor: Attempt | undefined;

  constructor(readonly pool: ConnectionPool, readonly socket: net.Socket, dialFor: Attempt) {
    this.#dialFor = dialFor;
    this.#closed = new Promise((resolve) => socket.once("close", () => resolve()));
    socket.on("data", (chunk: Buffer) => this.#onData(chunk));
    socket.on("end", () => this.#onEnd());
    socket.on("error", (error) => this.#onError(error));
    socket.once("close", () => this.#onError(new Error("Connection closed")));
  }

  connected(): void {
    this.#dialFor = undefined;
  }

  start(attempt: Attempt): void {
    this.#attempt = attempt;
    this.#phase = Phase.Head;
    this.#keepAlive = true;
    this.#headBytes = 0;
    this.#partialLength = 0;
    this.#received = 0;
    attempt.begin(this, this.requests++ > 0);
    this.socket.write(attempt.bytes);
  }

  /** Destroys the socket; resolves once it has closed. */
  destroy(): Promise<void> {
    this.#drop();
    this.socket.destroy();
    return this.#closed;
  }

  #drop(): void {
    if (this.#gone) return;
    this.#gone = true;
    this.pool.forget(this);
  }

  #onData(chunk: Buffer): void {
    this.#received += chunk.length;
    const attempt = this.#attempt;
    if (attempt === undefined) {
      // Nothing was asked: a server that talks out of turn is not reused.
      this.destroy();
      return;
    }
    let at = 0;
    while (at < chunk.length && this.#attempt === attempt) {
      switch (this.#phase) {
        case Phase.Head:
          at = this.#readHead(attempt, chunk, at);
          break;
        case Phase.Length:
        case Phase.ChunkData: {
          // `remaining` bytes of body; then the response ends, or the chunk's line end.
          const take = Math.min(this.#remaining, chunk.length - at);
          this.#remaining -= take;
          if (!attempt.data(chunk.subarray(at, at + take))) return this.#capped();
          at += take;
          if (this.#remaining > 0) break;
          if (this.#phase === Phase.Length) this.#complete();
          else this.#phase = Phase.ChunkEnd;
          break;
        }
        case Phase.UntilClose:
          if (!attempt.data(at === 0 ? chunk : chunk.subarray(at))) return this.#capped();
          at = chunk.length;
          break;
        case Phase.ChunkEnd:
        case Phase.ChunkSize:
        case Phase.Trailers:
          at = this.#readLine(attempt, chunk, at);
          break;
      }
    }
    if (!this.#completed) return;
    this.#completed = false;
    // Bytes past the end of the response: not a server we can keep talking to.
    if (at < chunk.length || !this.#keepAlive || this.#gone || this.socket.readableEnded) {
      this.destroy();
    } else this.pool.release(this);
  }

  /**
   * Bytes of an unfinished head or line, gathered without re-copying: `bytes` has room for
   * `limit` plus a terminator, and only new bytes are searched. Returns where the
   * terminator (a bare or CR LF line end; an empty line for a head) ends in the gathered
   * bytes and how many of `chunk` (from `at`) that took; "more" to wait for another chunk;
   * "over" past `limit`.
   */
  #gather(
    chunk: Buffer,
    at: number,
    limit: number,
    head: boolean,
  ): { bytes: Buffer; end: number; next: number; took: number } | "more" | "over" {
    const had = this.#partialLength;
    let bytes: Buffer;
    let from: number;
    if (had === 0) {
      bytes = chunk.subarray(at);
      from = 0;
    } else {
      const room = this.#partial!.length - had;
      const take = Math.min(room, chunk.length - at);
      chunk.copy(this.#partial!, had, at, at + take);
      bytes = this.#partial!.subarray(0, had + take);
      from = Math.max(0, had - 2);
    }
    const found = head ? headEnd(bytes, from) : lineEnd(bytes, from);
    if (found === undefined) {
      if (bytes.length > limit) return "over";
      if (had === 0) {
        this.#partial ??= Buffer.allocUnsafe(this.pool.settings.responseHeaderBytesMax + 4);
        if (this.#partial.length < limit + 4) this.#partial = Buffer.allocUnsafe(limit + 4);
        bytes.copy(this.#partial, 0);
      }
      this.#partialLength = bytes.length;
      return "more";
    }
    this.#partialLength = 0;
    return { bytes, end: found[0], next: found[1], took: found[1] - had };
  }

  /** Gathers the head; on its end, reads the status and framing headers. */
  #readHead(attempt: Attempt, chunk: Buffer, at: number): number {
    const limit = this.pool.settings.responseHeaderBytesMax;
    const got = this.#gather(chunk, at, limit - this.#headBytes, true);
    if (got === "more") return chunk.length;
    if (got === "over" || this.#headBytes + got.end > limit) {
      return this.#broken(`response head past ${limit} bytes`);
    }
    this.#headBytes += got.next;
    const consumed = at + got.took;
    const head = got.bytes.toString("latin1", 0, got.end);
    const m = /^HTTP\/1\.([01]) ([1-9]\d\d)(?: [^\r\n]*)?\r?(?:\n|$)/.exec(head);
    if (m === null) return this.#broken("malformed status line");
    const status = Number(m[2]);
    if (status < 200) {
      // Informational (103 Early Hints, a stray 100): the real response follows.
      if (status === 101) return this.#broken("unexpected 101 Switching Protocols");
      return consumed;
    }
    const http10 = m[1] === "0";
    let length = -1;
    let codings: string[] | undefined;
    this.#keepAlive = !http10;
    const kept: Partial<Record<KeptHeaderName, string>> = {};
    let lineStart = head.indexOf("\n") + 1;
    while (lineStart > 0 && lineStart < head.length) {
      let lineEnd = head.indexOf("\n", lineStart);
      if (lineEnd < 0) lineEnd = head.length;
      const colon = head.indexOf(":", lineStart);
      if (colon < 0 || colon > lineEnd) return this.#broken("malformed header line");
      const name = head.slice(lineStart, colon).toLowerCase();
      const value = head.slice(
        colon + 1,
        head.charCodeAt(lineEnd - 1) === 13 ? lineEnd - 1 : lineEnd,
      ).trim();
      if (name === "content-length") {
        if (!/^\d{1,15}$/.test(value) || (length >= 0 && length !== Number(value))) {
          return this.#broken("bad content-length");
        }
        length = Number(value);
      } else if (name === "transfer-encoding") {
        for (const coding of value.split(",")) (codings ??= []).push(coding.trim().toLowerCase());
      } else if (name === "connection") {
        if (/(?:^|,)\s*close\s*(?:,|$)/i.test(value)) this.#keepAlive = false;
        else if (http10 && /(?:^|,)\s*keep-alive\s*(?:,|$)/i.test(value)) {
          this.#keepAlive = true;
        }
      } else if ((KEPT_HEADERS as readonly string[]).includes(name)) {
        const prior = kept[name as KeptHeaderName];
        kept[name as KeptHeaderName] = (prior === undefined ? value : `${prior}, ${value}`)
          .slice(0, KEPT_HEADER_CHARS_MAX);
      }
      lineStart = lineEnd + 1;
    }
    attempt.response(status, kept);
    if (status === 204 || status === 304) {
      // No body, whatever the framing headers say (RFC 9112 §6.3).
      this.#complete();
    } else if (codings !== undefined) {
      // Chunked must be the final coding, once (§6.3); other codings are not decoded (the
      // body is only logged). With Content-Length too, or on HTTP/1.0, the framing is
      // suspect: read it chunked, then close.
      if (codings.at(-1) !== "chunked" || codings.indexOf("chunked") !== codings.length - 1) {
        return this.#broken(`unsupported transfer-encoding ${codings.join(", ")}`);
      }
      if (length >= 0 || http10) this.#keepAlive = false;
      this.#phase = Phase.ChunkSize;
    } else if (length === 0) {
      this.#complete();
    } else if (length > 0) {
      this.#phase = Phase.Length;
      this.#remaining = length;
    } else {
      this.#phase = Phase.UntilClose;
      this.#keepAlive = false;
    }
    return consumed;
  }

  /** A chunk-size line, the line end after chunk data, or a trailer line; each counts
   * against responseBytesMax with the body. */
  #readLine(attempt: Attempt, chunk: Buffer, at: number): number {
    const got = this.#gather(chunk, at, CHUNK_LINE_BYTES_MAX, false);
    if (got === "more") {
      return attempt.framing(chunk.length - at) ? chunk.length : this.#cappedAt();
    }
    if (got === "over") return this.#broken(`chunk line past ${CHUNK_LINE_BYTES_MAX} bytes`);
    const consumed = at + got.took;
    if (!attempt.framing(got.took)) return this.#cappedAt();
    const line = got.bytes.toString("latin1", 0, got.end);
    if (this.#phase === Phase.ChunkEnd) {
      if (line !== "") return this.#broken("chunk data not followed by a line end");
      this.#phase = Phase.ChunkSize;
      return consumed;
    }
    if (this.#phase === Phase.Trailers) {
      if (line === "") this.#complete();
      return consumed;
    }
    const size = /^([0-9a-fA-F]{1,12})(?:[ \t]*;.*)?$/.exec(line);
    if (size === null) return this.#broken("malformed chunk size");
    this.#remaining = parseInt(size[1], 16);
    this.#phase = this.#remaining === 0 ? Phase.Trailers : Phase.ChunkData;
    return consumed;
  }

  /** #capped() from inside a read: ends the data loop. */
  #cappedAt(): number {
    this.#capped();
    return Number.MAX_SAFE_INTEGER;
  }

  /** The response is complete: settle it. #onData then reuses or closes the connection. */
  #complete(): void {
    const attempt = this.#attempt!;
    this.#attempt = undefined;
    this.#phase = Phase.Head;
    this.#completed = true;
    attempt.done(true);
  }

  /** The body passed responseBytesMax: settle with what was read and drop the connection. */
  #capped(): void {
    const attempt = this.#attempt!;
    this.#attempt = undefined;
    attempt.done(false);
    this.destroy();
  }

  /** A response we cannot parse: the attempt fails and the connection goes. */
  #broken(reason: string): number {
    const attempt = this.#attempt;
    this.#attempt = undefined;
    this.destroy();
    attempt?.fail("network", `malformed response: ${reason}`);
    return Number.MAX_SAFE_INTEGER;
  }

  #onEnd(): void {
    if (this.#attempt !== undefined && this.#phase === Phase.UntilClose) {
      this.#complete();
      this.#completed = false;
      this.destroy();
      return;
    }
    this.#onError(new Error("The server closed the connection"));
  }

  #onError(error: Error & { code?: string }): void {
    const attempt = this.#attempt;
    const dialFor = this.#dialFor;
    // A kept-alive connection the server closed as we reused it: the request got no byte
    // of answer, so it goes once more on a new connection instead of failing into the
    // retry ladder. Webhooks are at-least-once, and a repeat keeps its webhook-id.
    const stale = attempt !== undefined && this.requests > 1 && this.#received === 0 &&
      attempt.mayRepeat();
    this.#attempt = this.#dialFor = undefined;
    this.#drop();
    if (!this.socket.destroyed) this.socket.destroy();
    if (stale) this.pool.redial(attempt);
    else attempt?.fail(classify(error, true), error.message, error);
    dialFor?.fail(classify(error, false), error.message, error);
  }

  /** The attempt on this connection gave up (deadline, abort): the response is abandoned. */
  abandon(attempt: Attempt): void {
    if (this.#attempt !== attempt) return;
    this.#attempt = undefined;
    this.destroy();
  }
}
