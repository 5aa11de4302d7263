// What one lean connection is held to: the settings of docs/configuration.md
// ("grpcH2*") as lean.ts passes them to conn.ts.
import { Setting, settingsPayload } from "./frames.ts";
export interface H2Limits {
  /** Streams a client may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS). */
  maxConcurrentStreams: number;
  /** Our receive window per stream and the connection's (flow control). */
  windowBytes: number;
  /** Largest frame payload we accept (SETTINGS_MAX_FRAME_SIZE). */
  maxFrameBytes: number;
  /** Largest decoded header list (SETTINGS_MAX_HEADER_LIST_SIZE). */
  headerListBytesMax: number;
  /** Request bytes the connection's streams may hold before they are whole messages. */
  inboundBytesMax: number;
  /** Bytes waiting in the socket above which the client is not read from (writer.ts). */
  writeBufferBytes: number;
  /** A connection without streams this long is closed (GOAWAY); 0: never. */
  idleMs: number;
  /** With nothing from the client this long, it is sent a PING; 0: never. */
  keepaliveMs: number;
  /** An unanswered keepalive PING ends the connection after this long. */
  keepaliveTimeoutMs: number;
  /** After we end a connection, how long its client gets to close it before it is cut. */
  closeGraceMs: number;
  /** PINGs closer together than this, with nothing sent between, are strikes. */
  pingIntervalMinMs: number;
  /** Strikes after which the connection ends (GOAWAY ENHANCE_YOUR_CALM). */
  pingStrikesMax: number;
}

/** RFC 9113's initial window and frame size, and the largest window. */
export const DEFAULT_WINDOW = 65_535;
export const DEFAULT_FRAME = 16_384;
export const WINDOW_MAX = 0x7fffffff;

/** The SETTINGS a lean connection opens with. */
export function serverSettings(limits: H2Limits): Uint8Array {
  return settingsPayload([
    [Setting.MAX_CONCURRENT_STREAMS, limits.maxConcurrentStreams],
    [Setting.INITIAL_WINDOW_SIZE, limits.windowBytes],
    [Setting.MAX_FRAME_SIZE, limits.maxFrameBytes],
    [Setting.MAX_HEADER_LIST_SIZE, limits.headerListBytesMax],
    [Setting.ENABLE_PUSH, 0],
  ]);
}

/** Request bytes a connection holds before they are whole messages, and its bound. */
export interface Inbound {
  bytes: number;
  readonly max: number;
}
