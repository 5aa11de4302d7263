// One HTTP/2 connection of the lean gRPC transport (prior-knowledge h2c or h2 over TLS,
// RFC 9113): the preface and SETTINGS exchange, PING, flow control both ways (WINDOW_UPDATE),
// RST_STREAM and GOAWAY, header blocks (HEADERS + CONTINUATION) through HPACK, and streams
// (stream.ts) handed to `onStream`. What goes out is written once per turn of the event
// loop, many streams' frames in one write. A protocol error ends the connection with GOAWAY.
import { Buffer } from "node:buffer";
import {
  ErrorCode,
  Flag,
  type Frame,
  frame,
  FrameError,
  FrameReader,
  goawayPayload,
  Setting,
  Type,
} from "./frames.ts";
import { IdleClock } from "./idle.ts";
import { Keepalive } from "./keepalive.ts";
import { PingPolicy } from "./ping_policy.ts";
import { type HeaderBlock, HeaderBlocks } from "./header_block.ts";
import { H2Stream, type StreamOwner } from "./stream.ts";
import { FrameWriter, type Socketish } from "./writer.ts";
import {
  DEFAULT_FRAME,
  DEFAULT_WINDOW,
  type H2Limits,
  type Inbound,
  serverSettings,
  WINDOW_MAX,
} from "./limits.ts";

export class H2Connection implements StreamOwner {
  sendWindow = DEFAULT_WINDOW;
  peerFrameBytes = DEFAULT_FRAME;
  readonly inbound: Inbound;
  #reader: FrameReader;
  #blocks: HeaderBlocks;
  #streams = new Map<number, H2Stream>();
  #lastStream = 0;
  #w: FrameWriter;
  #peerStreamWindow = DEFAULT_WINDOW;
  #recvUnacked = 0;
  #goingAway = false;
  #ended = false;
  #frames: Frame[] = [];
  #settingsSeen = false;
  /** Streams reset by the client whose handlers still run (they count as open). */
  #resetBusy = 0;
  #idle: IdleClock;
  #alive: Keepalive;
  #pings: PingPolicy;

  constructor(
    socket: Socketish,
    private readonly limits: H2Limits,
    private readonly onStream: (stream: H2Stream) => void,
  ) {
    this.#w = new FrameWriter(socket, limits.writeBufferBytes);
    this.inbound = { bytes: 0, max: limits.inboundBytesMax };
    this.#reader = new FrameReader(limits.maxFrameBytes);
    this.#blocks = new HeaderBlocks(limits.headerListBytesMax);
    this.#pings = new PingPolicy(limits.pingIntervalMinMs, limits.pingStrikesMax);
    this.#send(frame(Type.SETTINGS, 0, 0, serverSettings(limits)));
    if (limits.windowBytes > DEFAULT_WINDOW) {
      this.#windowUpdate(0, limits.windowBytes - DEFAULT_WINDOW);
    }
    this.#idle = new IdleClock(limits.idleMs, () => this.#streams.size > 0, () => {
      this.goaway(ErrorCode.NO_ERROR, "idle");
      this.terminate();
    });
    const ping = () => this.#send(frame(Type.PING, 0, 0, Buffer.from("kpalive!")));
    this.#alive = new Keepalive(limits.keepaliveMs, limits.keepaliveTimeoutMs, ping, () => {
      this.goaway(ErrorCode.NO_ERROR, "keepalive ping not answered");
      this.terminate();
    });
  }

  #drop(id: number) {
    if (this.#streams.delete(id) && this.#streams.size === 0) this.#idle.quiet();
  }

  /** Streams we have not finished (a finished one may wait for the client's end). */
  get openStreams(): number {
    let n = 0;
    for (const s of this.#streams.values()) if (!s.done) n++;
    return n;
  }

  /** Bytes from the socket. */
  receive(chunk: Buffer) {
    if (this.#ended) return;
    this.#alive.heard();
    const frames = this.#frames;
    frames.length = 0;
    try {
      this.#reader.push(chunk, frames);
      for (const f of frames) this.#frame(f);
    } catch (err) {
      const code = err instanceof FrameError ? err.code : ErrorCode.INTERNAL_ERROR;
      this.goaway(code, String((err as Error).message ?? err));
    }
  }

  /** The socket closed: every open stream is reset. */
  closed() {
    this.#ended = true;
    this.#idle.stop();
    this.#alive.stop();
    for (const s of this.#streams.values()) s.reset();
    this.#streams.clear();
  }

  /** No new streams (GOAWAY). With NO_ERROR the open ones finish and the client closes the
   * connection (ending it ourselves could cut a reply the client has not yet read); an
   * error code ends it at once. */
  goaway(code: number = ErrorCode.NO_ERROR, debug = "") {
    if (!this.#goingAway) {
      this.#goingAway = true;
      this.#send(frame(Type.GOAWAY, 0, 0, goawayPayload(this.#lastStream, code, debug)));
    }
    if (code !== ErrorCode.NO_ERROR) this.terminate();
  }

  /** Writes what is queued and ends the connection. */
  terminate() {
    if (this.#ended) return;
    this.#w.end(this.limits.closeGraceMs);
    this.closed();
  }

  #frame(f: Frame) {
    if (!this.#settingsSeen) {
      // §3.4: the client's preface ends with a SETTINGS frame.
      if (f.type !== Type.SETTINGS || (f.flags & Flag.ACK)) {
        throw new FrameError(ErrorCode.PROTOCOL_ERROR, "the preface must end with SETTINGS");
      }
      this.#settingsSeen = true;
    }
    if (this.#blocks.open && f.type !== Type.CONTINUATION) {
      throw new FrameError(ErrorCode.PROTOCOL_ERROR, "header block interrupted");
    }
    switch (f.type) {
      case Type.DATA:
        return this.#dataFrame(f);
      case Type.HEADERS: {
        if (f.stream === 0 || f.stream % 2 === 0) {
          throw new FrameError(ErrorCode.PROTOCOL_ERROR, "HEADERS on a bad stream id");
        }
        const block = this.#blocks.headers(f);
        return block && this.#headersDone(block);
      }
      case Type.CONTINUATION: {
        const block = this.#blocks.continuation(f);
        return block && this.#headersDone(block);
      }
      case Type.SETTINGS:
        return this.#settings(f);
      case Type.PING:
        if (f.stream !== 0) throw new FrameError(ErrorCode.PROTOCOL_ERROR, "PING on a stream");
        if (f.payload.length !== 8) throw new FrameError(ErrorCode.FRAME_SIZE_ERROR, "PING");
        if (f.flags & Flag.ACK) return;
        if (this.#pings.received(Date.now())) {
          return this.goaway(ErrorCode.ENHANCE_YOUR_CALM, "too_many_pings");
        }
        this.#send(frame(Type.PING, Flag.ACK, 0, f.payload));
        return;
      case Type.WINDOW_UPDATE:
        return this.#windowFrame(f);
      case Type.RST_STREAM: {
        if (f.stream === 0) throw new FrameError(ErrorCode.PROTOCOL_ERROR, "RST_STREAM on 0");
        this.#idleStreamCheck(f, "RST_STREAM");
        if (f.payload.length !== 4) throw new FrameError(ErrorCode.FRAME_SIZE_ERROR, "RST");
        const s = this.#streams.get(f.stream);
        if (!s) return;
        this.#drop(s.id);
        this.#app(s, () => s.reset());
        if (s.busy) {
          // A call the client gave up while its handler still works (a unary call) keeps
          // its place under maxConcurrentStreams until the handler is done: a client
          // cannot start handlers without bound by resetting each stream it opens.
          this.#resetBusy++;
          s.onreleased = () => this.#resetBusy--;
        }
        return;
      }
      case Type.GOAWAY:
        // The client leaves: no new streams; its open calls may still finish, then it closes.
        if (f.stream !== 0) throw new FrameError(ErrorCode.PROTOCOL_ERROR, "GOAWAY on a stream");
        if (f.payload.length < 8) throw new FrameError(ErrorCode.FRAME_SIZE_ERROR, "GOAWAY");
        this.#goingAway = true;
        return;
      case Type.PUSH_PROMISE:
        throw new FrameError(ErrorCode.PROTOCOL_ERROR, "clients cannot push");
      case Type.PRIORITY: {
        if (f.stream === 0) throw new FrameError(ErrorCode.PROTOCOL_ERROR, "PRIORITY on 0");
        if (f.payload.length === 5) return;
        const s = this.#streams.get(f.stream); // §6.3: a stream error
        return s
          ? this.#resetStream(s, ErrorCode.FRAME_SIZE_ERROR)
          : this.#rst(f.stream, ErrorCode.FRAME_SIZE_ERROR);
      }
      default:
        return; // unknown types are ignored (§5.5)
    }
  }

  #settings(f: Frame) {
    if (f.stream !== 0) throw new FrameError(ErrorCode.PROTOCOL_ERROR, "SETTINGS on a stream");
    if (f.flags & Flag.ACK) {
      if (f.payload.length !== 0) throw new FrameError(ErrorCode.FRAME_SIZE_ERROR, "SETTINGS ack");
      return;
    }
    if (f.payload.length % 6 !== 0) {
      throw new FrameError(ErrorCode.FRAME_SIZE_ERROR, "SETTINGS length");
    }
    for (let i = 0; i < f.payload.length; i += 6) {
      const id = f.payload.readUInt16BE(i), v = f.payload.readUInt32BE(i + 2);
      if (id === Setting.INITIAL_WINDOW_SIZE) {
        if (v > WINDOW_MAX) throw new FrameError(ErrorCode.FLOW_CONTROL_ERROR, "window");
        const delta = v - this.#peerStreamWindow;
        this.#peerStreamWindow = v;
        for (const s of this.#streams.values()) {
          s.sendWindow += delta;
          if (s.sendWindow > WINDOW_MAX) {
            throw new FrameError(ErrorCode.FLOW_CONTROL_ERROR, "a stream window overflows");
          }
        }
      } else if (id === Setting.MAX_FRAME_SIZE) {
        if (v < DEFAULT_FRAME || v > 0xffffff) {
          throw new FrameError(ErrorCode.PROTOCOL_ERROR, "MAX_FRAME_SIZE");
        }
        this.peerFrameBytes = v;
      } else if (id === Setting.ENABLE_PUSH && v > 1) {
        throw new FrameError(ErrorCode.PROTOCOL_ERROR, "ENABLE_PUSH");
      }
    }
    this.#send(frame(Type.SETTINGS, Flag.ACK, 0));
    for (const s of this.#streams.values()) s.pump();
  }

  #windowFrame(f: Frame) {
    if (f.payload.length !== 4) throw new FrameError(ErrorCode.FRAME_SIZE_ERROR, "WINDOW_UPDATE");
    const inc = f.payload.readUInt32BE(0) & WINDOW_MAX;
    if (f.stream === 0) {
      if (inc === 0) throw new FrameError(ErrorCode.PROTOCOL_ERROR, "WINDOW_UPDATE of 0");
      this.sendWindow += inc;
      if (this.sendWindow > WINDOW_MAX) {
        throw new FrameError(ErrorCode.FLOW_CONTROL_ERROR, "window overflow");
      }
      for (const s of this.#streams.values()) if (s.pendingBytes > 0) s.pump();
      return;
    }
    this.#idleStreamCheck(f, "WINDOW_UPDATE");
    const s = this.#streams.get(f.stream);
    if (!s) return;
    if (inc === 0) return this.#resetStream(s, ErrorCode.PROTOCOL_ERROR);
    s.sendWindow += inc;
    if (s.sendWindow > WINDOW_MAX) return this.#resetStream(s, ErrorCode.FLOW_CONTROL_ERROR);
    s.pump();
  }

  #headersDone(b: HeaderBlock) {
    const headers = b.headers;
    const end = (b.flags & Flag.END_STREAM) !== 0;
    const known = this.#streams.get(b.stream);
    if (known) {
      // Request trailers: only as the end of the stream.
      if (!end || known.remoteEnded) return this.#resetStream(known, ErrorCode.PROTOCOL_ERROR);
      known.remoteEnded = true;
      if (known.done) this.#forget(known);
      else this.#app(known, () => known.onend?.());
      return;
    }
    if (b.stream <= this.#lastStream) {
      throw new FrameError(ErrorCode.STREAM_CLOSED, "HEADERS on a closed stream");
    }
    this.#lastStream = b.stream;
    const open = this.#streams.size + this.#resetBusy;
    if (this.#goingAway || open >= this.limits.maxConcurrentStreams) {
      return this.#rst(b.stream, ErrorCode.REFUSED_STREAM);
    }
    const s = new H2Stream(b.stream, headers, this.#peerStreamWindow, this);
    this.#streams.set(s.id, s);
    this.#app(s, () => this.onStream(s));
    if (end && !s.done) {
      s.remoteEnded = true;
      this.#app(s, () => s.onend?.());
    }
  }

  #dataFrame(f: Frame) {
    if (f.stream === 0) throw new FrameError(ErrorCode.PROTOCOL_ERROR, "DATA on stream 0");
    let p = f.payload;
    this.#recvUnacked += p.length;
    if (this.#recvUnacked > this.limits.windowBytes) {
      throw new FrameError(ErrorCode.FLOW_CONTROL_ERROR, "beyond the connection window");
    }
    if (this.#recvUnacked >= this.limits.windowBytes / 2) {
      this.#windowUpdate(0, this.#recvUnacked);
      this.#recvUnacked = 0;
    }
    const s = this.#streams.get(f.stream);
    if (!s) {
      if (f.stream > this.#lastStream) {
        throw new FrameError(ErrorCode.PROTOCOL_ERROR, "DATA on an idle stream");
      }
      return; // a stream already finished or reset: counted above, dropped here
    }
    if (s.remoteEnded) return this.#resetStream(s, ErrorCode.STREAM_CLOSED);
    const end = (f.flags & Flag.END_STREAM) !== 0;
    if (s.done) {
      if (end) this.#forget(s);
      return;
    }
    if (f.flags & Flag.PADDED) {
      const pad = p.length > 0 ? p[0] : 0;
      if (p.length < 1 || pad >= p.length) {
        throw new FrameError(ErrorCode.PROTOCOL_ERROR, "padding");
      }
      p = p.subarray(1, p.length - pad);
    }
    s.recvUnacked += f.payload.length;
    if (s.recvUnacked > this.limits.windowBytes) {
      return this.#resetStream(s, ErrorCode.FLOW_CONTROL_ERROR);
    }
    if (!end && s.recvUnacked >= this.limits.windowBytes / 2) {
      this.#windowUpdate(s.id, s.recvUnacked);
      s.recvUnacked = 0;
    }
    if (p.length > 0) this.#app(s, () => s.ondata?.(p));
    if (end && !s.done) {
      s.remoteEnded = true;
      this.#app(s, () => s.onend?.());
    }
  }

  // StreamOwner: what streams send.
  headers(stream: number, block: Uint8Array, end: boolean) {
    this.#pings.sent();
    this.#w.headers(stream, block, end);
  }

  data(stream: number, pieces: Uint8Array[], length: number) {
    this.#pings.sent();
    this.#w.data(stream, pieces, length);
  }

  finished(s: H2Stream) {
    // A client still sending (a refused request, a bidi stream ended by us) is told to stop
    // with RST_STREAM NO_ERROR after the trailers (RFC 9113 §8.1); what it sent meanwhile
    // is dropped (counted against the connection window).
    if (!s.remoteEnded) this.#rst(s.id, ErrorCode.NO_ERROR);
    this.#forget(s);
  }

  /** Runs the application's code for a stream: what it throws resets that stream
   * (INTERNAL_ERROR) rather than ending the connection and every call on it. */
  #app(s: H2Stream, run: () => void) {
    try {
      run();
    } catch {
      if (this.#streams.get(s.id) === s) this.#resetStream(s, ErrorCode.INTERNAL_ERROR);
    }
  }

  /** RST_STREAM or WINDOW_UPDATE on a stream never opened: a connection error (§5.1). */
  #idleStreamCheck(f: Frame, what: string) {
    if (f.stream > this.#lastStream) {
      throw new FrameError(ErrorCode.PROTOCOL_ERROR, `${what} on an idle stream`);
    }
  }

  #forget(s: H2Stream) {
    this.#drop(s.id);
  }

  #resetStream(s: H2Stream, code: number) {
    this.#drop(s.id);
    s.reset();
    this.#rst(s.id, code);
  }

  #rst(stream: number, code: number) {
    this.#w.rst(stream, code);
  }

  #windowUpdate(stream: number, inc: number) {
    this.#w.windowUpdate(stream, inc);
  }

  #send(bytes: Uint8Array) {
    this.#w.send(bytes);
  }
}
