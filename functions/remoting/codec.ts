// RocketMQ's remoting frames (reference/rocketmq.md §17), pure: no sockets, no clock.
//
//   int32 length          = 4 + headerLen + bodyLen   (does not count itself)
//   int32 typeAndHdrLen   = (serializeType << 24) | headerLen
//   header[headerLen]     JSON (type 0) or ROCKETMQ binary (type 1)
//   body[rest]
//
// ROCKETMQ binary header (RocketMQSerializable):
//   short code, byte language, short version, int opaque, int flag,
//   int remarkLen + remark, int extLen + (short kLen + k, int vLen + v)*
//
// A frame that breaks these rules is a FrameError: the connection that sent it is closed
// (server.ts), since nothing after a bad length can be trusted.

export const SERIALIZE_JSON = 0;
export const SERIALIZE_ROCKETMQ = 1;
/** flag bit 0: a response; bit 1: a oneway request (no response expected). */
export const FLAG_RESPONSE = 1;
export const FLAG_ONEWAY = 2;
/** com.rocketmq.remoting.frameMaxLength: 16 MiB. */
export const FRAME_BYTES_MAX = 16 * 1024 * 1024;
const HEADER_BYTES_MAX = 0xFFFFFF;

/** LanguageCode by ordinal (RocketMQ's enum order). */
export const LANGUAGES = [
  "JAVA",
  "CPP",
  "DOTNET",
  "PYTHON",
  "DELPHI",
  "ERLANG",
  "RUBY",
  "OTHER",
  "HTTP",
  "GO",
  "PHP",
  "OMS",
  "RUST",
  "NODE_JS",
] as const;

export interface RemotingCommand {
  code: number;
  language: string;
  version: number;
  opaque: number;
  flag: number;
  remark?: string;
  /** Custom header fields, flattened to strings as RocketMQ does. */
  extFields: Record<string, string>;
  body?: Uint8Array;
  serializeType: typeof SERIALIZE_JSON | typeof SERIALIZE_ROCKETMQ;
}

export class FrameError extends Error {
  override name = "FrameError";
}

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });
// JSON headers: a lenient decode (a fatal one costs Deno about twice as much); bytes that
// are not UTF-8 become U+FFFD inside strings, or fail JSON.parse elsewhere.
const lenient = new TextDecoder("utf-8");

export function isResponse(cmd: RemotingCommand): boolean {
  return (cmd.flag & FLAG_RESPONSE) !== 0;
}
export function isOneway(cmd: RemotingCommand): boolean {
  return (cmd.flag & FLAG_ONEWAY) !== 0;
}

/** A response to `request`: same opaque and serialize type, the response flag set. */
export function responseTo(
  request: RemotingCommand,
  code: number,
  remark?: string,
  extFields: Record<string, string> = {},
  body?: Uint8Array,
): RemotingCommand {
  return {
    code,
    language: "JAVA",
    version: request.version,
    opaque: request.opaque,
    flag: FLAG_RESPONSE,
    remark,
    extFields,
    body,
    serializeType: request.serializeType,
  };
}

/** The whole frame, length prefix included. */
export function encodeCommand(cmd: RemotingCommand): Uint8Array {
  const header = cmd.serializeType === SERIALIZE_ROCKETMQ
    ? encodeBinaryHeader(cmd)
    : encodeJson(cmd);
  if (header.length > HEADER_BYTES_MAX) throw new FrameError("Cannot encode a header over 16 MiB");
  const bodyBytes = cmd.body?.length ?? 0;
  const length = 4 + header.length + bodyBytes;
  const out = new Uint8Array(4 + length);
  const view = new DataView(out.buffer);
  view.setInt32(0, length);
  view.setInt32(4, ((cmd.serializeType & 0xff) << 24) | header.length);
  out.set(header, 8);
  if (cmd.body) out.set(cmd.body, 8 + header.length);
  return out;
}

function encodeJson(cmd: RemotingCommand): Uint8Array {
  const header: Record<string, unknown> = {
    code: cmd.code,
    language: cmd.language,
    version: cmd.version,
    opaque: cmd.opaque,
    flag: cmd.flag,
    extFields: cmd.extFields,
    serializeTypeCurrentRPC: "JSON",
  };
  if (cmd.remark !== undefined) header.remark = cmd.remark;
  return encoder.encode(JSON.stringify(header));
}

function encodeBinaryHeader(cmd: RemotingCommand): Uint8Array {
  const remark = cmd.remark === undefined ? undefined : encoder.encode(cmd.remark);
  const ext = Object.entries(cmd.extFields).map(([k, v]) => [encoder.encode(k), encoder.encode(v)]);
  let size = 2 + 1 + 2 + 4 + 4 + 4 + (remark?.length ?? 0) + 4;
  for (const [k, v] of ext) size += 2 + k.length + 4 + v.length;
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  const lang = LANGUAGES.indexOf(cmd.language as typeof LANGUAGES[number]);
  view.setInt16(0, cmd.code);
  view.setUint8(2, lang < 0 ? LANGUAGES.indexOf("OTHER") : lang);
  view.setInt16(3, cmd.version);
  view.setInt32(5, cmd.opaque);
  view.setInt32(9, cmd.flag);
  let p = 13;
  if (remark) {
    view.setInt32(p, remark.length);
    out.set(remark, p + 4);
    p += 4 + remark.length;
  } else {
    view.setInt32(p, 0);
    p += 4;
  }
  view.setInt32(p, size - p - 4);
  p += 4;
  for (const [k, v] of ext) {
    view.setInt16(p, k.length);
    out.set(k, p + 2);
    p += 2 + k.length;
    view.setInt32(p, v.length);
    out.set(v, p + 4);
    p += 4 + v.length;
  }
  return out;
}

/** One frame's payload (after the length prefix) as a command; a FrameError when malformed. */
export function decodeCommand(payload: Uint8Array): RemotingCommand {
  if (payload.length < 4) throw new FrameError("Frame shorter than its header length field");
  const view = new DataView(payload.buffer, payload.byteOffset, payload.length);
  const typeAndLen = view.getInt32(0);
  const serializeType = (typeAndLen >>> 24) & 0xff;
  const headerLen = typeAndLen & HEADER_BYTES_MAX;
  if (headerLen > payload.length - 4) {
    throw new FrameError(`Header length ${headerLen} runs past the frame (${payload.length - 4})`);
  }
  const headerBytes = payload.subarray(4, 4 + headerLen);
  const bodyBytes = payload.subarray(4 + headerLen);
  let cmd: RemotingCommand;
  if (serializeType === SERIALIZE_JSON) cmd = decodeJsonHeader(headerBytes);
  else if (serializeType === SERIALIZE_ROCKETMQ) cmd = decodeBinaryHeader(headerBytes);
  else throw new FrameError(`Unknown serialize type ${serializeType}`);
  if (bodyBytes.length > 0) cmd.body = bodyBytes;
  return cmd;
}

function decodeJsonHeader(bytes: Uint8Array): RemotingCommand {
  let v: Record<string, unknown>;
  try {
    v = JSON.parse(lenient.decode(bytes));
  } catch {
    throw new FrameError("Header is not valid JSON");
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) {
    throw new FrameError("Header is not a JSON object");
  }
  const int = (name: string, fallback?: number) => {
    const x = v[name] ?? fallback;
    if (typeof x !== "number" || !Number.isInteger(x)) {
      throw new FrameError(`Header field ${name} is not an integer`);
    }
    return x;
  };
  const language = typeof v.language === "number"
    ? LANGUAGES[v.language] ?? "OTHER"
    : typeof v.language === "string"
    ? v.language
    : "OTHER";
  const cmd: RemotingCommand = {
    code: int("code"),
    language,
    version: int("version", 0),
    opaque: int("opaque", 0),
    flag: int("flag", 0),
    extFields: extFieldsOf(v.extFields),
    serializeType: SERIALIZE_JSON,
  };
  if (typeof v.remark === "string") cmd.remark = v.remark;
  return cmd;
}

/** Clients send numbers and booleans in extFields too (ali-ons does): kept as text. */
function extFieldsOf(raw: unknown): Record<string, string> {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== "object" || Array.isArray(raw)) {
    throw new FrameError("Header field extFields is not an object");
  }
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(raw as Record<string, unknown>)) {
    if (x === null || x === undefined) continue;
    if (typeof x === "object") throw new FrameError(`extFields.${k} is not a plain value`);
    out[k] = String(x);
  }
  return out;
}

function decodeBinaryHeader(bytes: Uint8Array): RemotingCommand {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const need = (at: number, n: number) => {
    if (at + n > bytes.length || n < 0) throw new FrameError("Binary header runs short");
  };
  const text = (at: number, n: number) => {
    need(at, n);
    try {
      return decoder.decode(bytes.subarray(at, at + n));
    } catch {
      throw new FrameError("Binary header holds text that is not UTF-8");
    }
  };
  need(0, 17);
  const cmd: RemotingCommand = {
    code: view.getInt16(0),
    language: LANGUAGES[view.getUint8(2)] ?? "OTHER",
    version: view.getInt16(3),
    opaque: view.getInt32(5),
    flag: view.getInt32(9),
    extFields: {},
    serializeType: SERIALIZE_ROCKETMQ,
  };
  const remarkLen = view.getInt32(13);
  let p = 17;
  if (remarkLen > 0) {
    cmd.remark = text(p, remarkLen);
    p += remarkLen;
  } else if (remarkLen < 0) throw new FrameError("Negative remark length");
  need(p, 4);
  const extLen = view.getInt32(p);
  p += 4;
  need(p, extLen);
  const end = p + extLen;
  while (p < end) {
    need(p, 2);
    const kLen = view.getInt16(p);
    const k = text(p + 2, kLen);
    p += 2 + kLen;
    need(p, 4);
    const vLen = view.getInt32(p);
    cmd.extFields[k] = text(p + 4, vLen);
    p += 4 + vLen;
  }
  if (p !== end) throw new FrameError("Binary header ext fields overrun their length");
  return cmd;
}

/**
 * Splits a byte stream into frame payloads. `push()` returns the payloads completed by a
 * chunk; a length under 4 or over `frameBytesMax` is a FrameError (the stream is lost).
 */
export class FrameDecoder {
  #buf = new Uint8Array(0);
  #start = 0;
  #end = 0;

  constructor(private readonly frameBytesMax: number = FRAME_BYTES_MAX) {}

  /** Bytes received but not yet a whole frame. */
  get pendingBytes(): number {
    return this.#end - this.#start;
  }

  push(chunk: Uint8Array): Uint8Array[] {
    const frames: Uint8Array[] = [];
    let from = chunk;
    if (this.#end === this.#start) {
      // Nothing pending: whole frames are cut from the chunk itself (no copy); only a
      // partial tail is kept.
      const at = this.#cut(chunk, 0, chunk.length, frames);
      if (at === chunk.length) return frames;
      from = chunk.subarray(at);
    }
    this.#append(from);
    this.#start = this.#cut(this.#buf, this.#start, this.#end, frames, true);
    if (this.#start === this.#end) this.#start = this.#end = 0;
    return frames;
  }

  /** Frames in b[start, end) into `frames`; returns where the first incomplete one starts.
   * `copy`: the frames are copies (the buffer is reused), else views of `b`. */
  #cut(b: Uint8Array, start: number, end: number, frames: Uint8Array[], copy = false): number {
    let s = start;
    while (end - s >= 4) {
      const length = ((b[s] << 24) | (b[s + 1] << 16) | (b[s + 2] << 8) | b[s + 3]) | 0;
      if (length < 4 || length > this.frameBytesMax) {
        throw new FrameError(
          `Frame length ${length} is outside 4-${this.frameBytesMax} (frameMaxLength)`,
        );
      }
      if (end - s < 4 + length) break;
      frames.push(copy ? b.slice(s + 4, s + 4 + length) : b.subarray(s + 4, s + 4 + length));
      s += 4 + length;
    }
    return s;
  }

  #append(chunk: Uint8Array): void {
    if (this.#end + chunk.length > this.#buf.length) {
      const live = this.#end - this.#start;
      const size = Math.max(live + chunk.length, this.#buf.length * 2, 4096);
      const next = size > this.#buf.length ? new Uint8Array(size) : this.#buf;
      next.set(this.#buf.subarray(this.#start, this.#end), 0);
      this.#buf = next;
      this.#start = 0;
      this.#end = live;
    }
    this.#buf.set(chunk, this.#end);
    this.#end += chunk.length;
  }
}
