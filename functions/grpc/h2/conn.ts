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
  Setting,
  Type,
} from "./frames.ts";
import { type HeaderBlock, HeaderBlocks } from "./header_block.ts";
import { H2Stream, type StreamOwner } from "./stream.ts";
import { FrameWriter, type Socketish } from "./writer.ts";

export interface H2Limits {
  /** Streams a client may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS). */
  maxConcurrentStreams: number;
  /** Our receive window per stream and the connection's (flow control). */
  windowBytes: number;
  /** Largest frame payload we accept (SETTINGS_MAX_FRAME_SIZE). */
  maxFrameBytes: number;
  /** Largest decoded header list (SETTINGS_MAX_HEADER_LIST_SIZE). */
  headerListBytesMax: number;
  /** Bytes waiting in the socket above which the client is not read from (writer.ts). */
  writeBufferBytes: number;
  /** A connection without streams this long is closed (GOAWAY); 0: never. */
  idleMs: number;
}

const DEFAULT_WINDOW = 65_535;
const DEFAULT_FRAME = 16_384;
const WINDOW_MAX = 0x7fffffff;

export class H2Connection implements StreamOwner {
  sendWindow = DEFAULT_WINDOW;
  peerFrameBytes = DEFAULT_FRAME;
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
  #idleTimer: ReturnType<typeof setTimeout> | undefined;
  #idleSince = 0;

  constructor(
    socket: Socketish,
    private readonly limits: H2Limits,
    private readonly onStream: (stream: H2Stream) => void,
  ) {
    this.#w = new FrameWriter(socket, limits.writeBufferBytes);
    this.#reader = new FrameReader(limits.maxFrameBytes);
    this.#blocks = new HeaderBlocks(limits.headerListBytesMax);
    const s = Buffer.alloc(30);
    const put = (i: number, id: number, v: number) => {
      s.writeUInt16BE(id, i * 6);
      s.writeUInt32BE(v, i * 6 + 2);
    };
    put(0, Setting.MAX_CONCURRENT_STREAMS, limits.maxConcurrentStreams);
    put(1, Setting.INITIAL_WINDOW_SIZE, limits.windowBytes);
    put(2, Setting.MAX_FRAME_SIZE, limits.maxFrameBytes);
    put(3, Setting.MAX_HEADER_LIST_SIZE, limits.headerListBytesMax);
    put(4, Setting.ENABLE_PUSH, 0);
    this.#send(frame(Type.SETTINGS, 0, 0, s));
    if (limits.windowBytes > DEFAULT_WINDOW) {
      this.#windowUpdate(0, limits.windowBytes - DEFAULT_WINDOW);
    }
    this.#idleSince = Date.now();
    if (limits.idleMs > 0) this.#armIdle(limits.idleMs);
  }

  /** Idle (no streams, from the start too: a socket that never sends the preface) for
   * idleMs: GOAWAY and close, as gRPC's max_connection_idle. */
  #armIdle(ms: number) {
    this.#idleTimer = setTimeout(() => {
      if (this.#ended) return;
      const left = this.#idleSince + this.limits.idleMs - Date.now();
      if (this.#streams.size > 0 || left > 0) {
        return this.#armIdle(this.#streams.size > 0 ? this.limits.idleMs : left);
      }
      this.goaway(ErrorCode.NO_ERROR, "idle");
      this.terminate();
    }, ms);
    (this.#idleTimer as { unref?: () => void }).unref?.();
  }

  #drop(id: number) {
    if (this.#streams.delete(id) && this.#streams.size === 0) this.#idleSince = Date.now();
  }

  /** Streams open now. */
  /** Streams we have not finished (a finished one may wait for the client's end). */
  get openStreams(): number {
    let n = 0;
    for (const s of this.#streams.values()) if (!s.done) n++;
    return n;
  }

  /** Bytes from the socket. */
  receive(chunk: Buffer) {
    if (this.#ended) return;
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
    clearTimeout(this.#idleTimer);
    for (const s of this.#streams.values()) s.reset();
    this.#streams.clear();
  }

  /** No new streams (GOAWAY). With NO_ERROR the open ones finish and the client closes the
   * connection (ending it ourselves could cut a reply the client has not yet read); an
   * error code ends it at once. */
  goaway(code: number = ErrorCode.NO_ERROR, debug = "") {
    if (!this.#goingAway) {
      this.#goingAway = true;
      const text = Buffer.from(debug.slice(0, 200));
      const p = Buffer.alloc(8 + text.length);
      p.writeUInt32BE(this.#lastStream, 0);
      p.writeUInt32BE(code, 4);
      p.set(text, 8);
      this.#send(frame(Type.GOAWAY, 0, 0, p));
    }
    if (code !== ErrorCode.NO_ERROR) this.terminate();
  }

  /** Writes what is queued and ends the connection. */
  terminate() {
    if (this.#ended) return;
    this.#w.end();
    this.closed();
  }

  #frame(f: Frame) {
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
        if (!(f.flags & Flag.ACK)) this.#send(frame(Type.PING, Flag.ACK, 0, f.payload));
        return;
      case Type.WINDOW_UPDATE:
        return this.#windowFrame(f);
      case Type.RST_STREAM: {
        if (f.stream === 0) throw new FrameError(ErrorCode.PROTOCOL_ERROR, "RST_STREAM on 0");
        if (f.payload.length !== 4) throw new FrameError(ErrorCode.FRAME_SIZE_ERROR, "RST");
        const s = this.#streams.get(f.stream);
        if (s) {
          this.#drop(s.id);
          s.reset();
        }
        return;
      }
      case Type.GOAWAY:
        // The client leaves: no new streams; its open calls may still finish, then it closes.
        if (f.stream !== 0) throw new FrameError(ErrorCode.PROTOCOL_ERROR, "GOAWAY on a stream");
        this.#goingAway = true;
        return;
      case Type.PUSH_PROMISE:
        throw new FrameError(ErrorCode.PROTOCOL_ERROR, "clients cannot push");
      case Type.PRIORITY:
        if (f.stream === 0) throw new FrameError(ErrorCode.PROTOCOL_ERROR, "PRIORITY on 0");
        return;
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
        for (const s of this.#streams.values()) s.sendWindow += delta;
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
      else known.onend?.();
      return;
    }
    if (b.stream <= this.#lastStream) {
      throw new FrameError(ErrorCode.STREAM_CLOSED, "HEADERS on a closed stream");
    }
    this.#lastStream = b.stream;
    if (this.#goingAway || this.#streams.size >= this.limits.maxConcurrentStreams) {
      return this.#rst(b.stream, ErrorCode.REFUSED_STREAM);
    }
    const s = new H2Stream(b.stream, headers, this.#peerStreamWindow, this);
    this.#streams.set(s.id, s);
    this.onStream(s);
    if (end && !s.done) {
      s.remoteEnded = true;
      s.onend?.();
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
    if (p.length > 0) s.ondata?.(p);
    if (end) {
      s.remoteEnded = true;
      s.onend?.();
    }
  }

  // StreamOwner: what streams send.
  headers(stream: number, block: Uint8Array, end: boolean) {
    this.#w.headers(stream, block, end);
  }

  data(stream: number, pieces: Uint8Array[], length: number) {
    this.#w.data(stream, pieces, length);
  }

  finished(s: H2Stream) {
    // A client still sending (a refused request, a bidi stream ended by us) is told to stop
    // with RST_STREAM NO_ERROR after the trailers (RFC 9113 §8.1); what it sent meanwhile
    // is dropped (counted against the connection window).
    if (!s.remoteEnded) this.#rst(s.id, ErrorCode.NO_ERROR);
    this.#forget(s);
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
