// Settings of the RocketMQ 5 gRPC front end (functions/grpc/, docs/grpc.md). Rows of the
// broker's settings table that split-mode functions read from the environment too.
import { boolSetting, choiceSetting, fromEnv, intSetting, textSetting } from "./setting.ts";

const MIB = 1024 * 1024;

export const GRPC_ENABLED = boolSetting("grpcEnabled", "MQ_GRPC", {
  default: true,
  doc: "Serve the RocketMQ 5 gRPC API (apache.rocketmq.v2.MessagingService).",
});
export const GRPC_PORT = intSetting("grpcPort", "MQ_GRPC_PORT", {
  default: 8081,
  defaultText: "8081 (0 when port is 0)",
  max: 65535,
  doc: "gRPC port, RocketMQ's proxy default (0 picks a free port).",
  rocketmq: "grpcServerPort",
});
export const GRPC_TLS_CERT_FILE = textSetting("grpcTlsCertFile", "MQ_GRPC_TLS_CERT_FILE", {
  default: "",
  defaultText: "(plaintext h2c)",
  doc: "PEM certificate chain: with grpcTlsKeyFile, the gRPC port serves TLS only.",
});
export const GRPC_TLS_KEY_FILE = textSetting("grpcTlsKeyFile", "MQ_GRPC_TLS_KEY_FILE", {
  default: "",
  doc: "PEM private key of grpcTlsCertFile.",
});
export const GRPC_REQUEST_BYTES_MAX = intSetting(
  "grpcRequestBytesMax",
  "MQ_GRPC_REQUEST_BYTES_MAX",
  {
    unit: "bytes",
    default: 8 * MIB,
    defaultText: "8388608 (8 MiB)",
    min: 1024,
    doc: "Largest gRPC request message: above maxMessageSize plus its properties.",
    why: "grpc-js's own 4 MiB default is below a 4 MiB body plus headers",
  },
);
export const GRPC_CLIENTS_MAX = intSetting("grpcClientsMax", "MQ_GRPC_CLIENTS_MAX", {
  unit: "count",
  default: 10_000,
  min: 1,
  doc: "gRPC clients (Telemetry sessions) one process keeps settings for; more are refused.",
});
export const GRPC_SHUTDOWN_MS = intSetting("grpcShutdownMs", "MQ_GRPC_SHUTDOWN_MS", {
  unit: "ms",
  default: 2000,
  doc: "On shutdown, calls in flight get this long before their streams are cut.",
});
export const GRPC_AUTO_RENEW_MS = intSetting("grpcAutoRenewMs", "MQ_GRPC_AUTO_RENEW_MS", {
  unit: "ms",
  default: 60_000,
  min: 1000,
  doc:
    "Lease of an auto_renew receive (PushConsumer) without invisible_duration; renewed when half is left, until acked.",
});
export const GRPC_AUTO_RENEW_MAX_MS = intSetting(
  "grpcAutoRenewMaxMs",
  "MQ_GRPC_AUTO_RENEW_MAX_MS",
  {
    unit: "ms",
    default: 3 * 3600_000,
    defaultText: "10800000 (3 h)",
    min: 1000,
    doc: "An auto_renew message held longer than this is no longer renewed and comes back.",
  },
);
export const GRPC_AUTO_RENEW_HELD_MAX = intSetting(
  "grpcAutoRenewHeldMax",
  "MQ_GRPC_AUTO_RENEW_HELD_MAX",
  {
    unit: "count",
    default: 100_000,
    min: 1,
    doc: "auto_renew messages renewed at once per process; more are leased once, not renewed.",
  },
);

export const GRPC_TRANSPORT = choiceSetting("grpcTransport", "MQ_GRPC_TRANSPORT", [
  "grpc-js",
  "lean",
], {
  default: "lean",
  doc:
    "HTTP/2 under the gRPC front end: lean (our own HTTP/2 framing, functions/grpc/h2; under half of grpc-js's CPU per call) or grpc-js (its node:http2 server).",
});
export const GRPC_H2_STREAMS_MAX = intSetting("grpcH2StreamsMax", "MQ_GRPC_H2_STREAMS_MAX", {
  unit: "count",
  default: 1000,
  min: 1,
  doc: "Lean transport: streams one connection may have open (SETTINGS_MAX_CONCURRENT_STREAMS).",
});
export const GRPC_H2_WINDOW_BYTES = intSetting("grpcH2WindowBytes", "MQ_GRPC_H2_WINDOW_BYTES", {
  unit: "bytes",
  default: 1024 * 1024,
  defaultText: "1048576 (1 MiB)",
  min: 65_535,
  max: 0x7fffffff,
  doc: "Lean transport: receive window of each stream and of each connection (flow control).",
});
export const GRPC_H2_FRAME_BYTES_MAX = intSetting(
  "grpcH2FrameBytesMax",
  "MQ_GRPC_H2_FRAME_BYTES_MAX",
  {
    unit: "bytes",
    default: 16_384,
    min: 16_384,
    max: 16_777_215,
    doc: "Lean transport: largest frame payload accepted (SETTINGS_MAX_FRAME_SIZE).",
  },
);
export const GRPC_H2_HEADER_BYTES_MAX = intSetting(
  "grpcH2HeaderBytesMax",
  "MQ_GRPC_H2_HEADER_BYTES_MAX",
  {
    unit: "bytes",
    default: 16_384,
    min: 1024,
    doc:
      "Lean transport: largest header block and decoded header list of a request (SETTINGS_MAX_HEADER_LIST_SIZE).",
  },
);
export const GRPC_H2_INBOUND_BYTES_MAX = intSetting(
  "grpcH2InboundBytesMax",
  "MQ_GRPC_H2_INBOUND_BYTES_MAX",
  {
    unit: "bytes",
    default: 64 * MIB,
    defaultText: "67108864 (64 MiB)",
    min: 65_536,
    doc:
      "Lean transport: request bytes one connection's calls may hold before they are whole messages; the call that goes over is refused (RESOURCE_EXHAUSTED).",
    why: "without it grpcH2StreamsMax streams each sending most of grpcRequestBytesMax is 8 GiB",
  },
);
export const GRPC_H2_WRITE_BUFFER_BYTES = intSetting(
  "grpcH2WriteBufferBytes",
  "MQ_GRPC_H2_WRITE_BUFFER_BYTES",
  {
    unit: "bytes",
    default: 1024 * 1024,
    defaultText: "1048576 (1 MiB)",
    min: 16_384,
    doc:
      "Lean transport: bytes waiting to be written to a connection above which its client is not read from until they drain (a client that does not read cannot pile up replies).",
  },
);
export const GRPC_H2_IDLE_MS = intSetting("grpcH2IdleMs", "MQ_GRPC_H2_IDLE_MS", {
  unit: "ms",
  default: 120_000,
  doc:
    "Lean transport: a connection with no call open this long (or that never sends the HTTP/2 preface) gets GOAWAY and is closed; 0: never.",
  rocketmq: "grpcClientIdleTimeMills",
});
export const GRPC_H2_KEEPALIVE_MS = intSetting("grpcH2KeepaliveMs", "MQ_GRPC_H2_KEEPALIVE_MS", {
  unit: "ms",
  default: 60_000,
  doc:
    "Lean transport: a connection that sent nothing this long is sent a PING (keepalive, to find clients that vanished); 0: never.",
});
export const GRPC_H2_KEEPALIVE_TIMEOUT_MS = intSetting(
  "grpcH2KeepaliveTimeoutMs",
  "MQ_GRPC_H2_KEEPALIVE_TIMEOUT_MS",
  {
    unit: "ms",
    default: 20_000,
    min: 1,
    doc:
      "Lean transport: a keepalive PING not answered within this ends the connection (gRPC's keepalive_timeout).",
  },
);
export const GRPC_H2_PING_INTERVAL_MIN_MS = intSetting(
  "grpcH2PingIntervalMinMs",
  "MQ_GRPC_H2_PING_INTERVAL_MIN_MS",
  {
    unit: "ms",
    default: 10_000,
    doc:
      "Lean transport: a client PING sooner than this after its last one, with no reply sent between, is a strike (too many pings).",
    why: "RocketMQ's Java client pings every 300 s; grpc-js pings only when told to",
  },
);
export const GRPC_H2_PING_STRIKES_MAX = intSetting(
  "grpcH2PingStrikesMax",
  "MQ_GRPC_H2_PING_STRIKES_MAX",
  {
    unit: "count",
    default: 2,
    doc:
      "Lean transport: ping strikes after which a connection ends with GOAWAY ENHANCE_YOUR_CALM too_many_pings (gRPC's max_ping_strikes).",
  },
);

export const GRPC_SETTINGS = [
  GRPC_ENABLED,
  GRPC_PORT,
  GRPC_TLS_CERT_FILE,
  GRPC_TLS_KEY_FILE,
  GRPC_REQUEST_BYTES_MAX,
  GRPC_CLIENTS_MAX,
  GRPC_SHUTDOWN_MS,
  GRPC_AUTO_RENEW_MS,
  GRPC_AUTO_RENEW_MAX_MS,
  GRPC_AUTO_RENEW_HELD_MAX,
  GRPC_TRANSPORT,
  GRPC_H2_STREAMS_MAX,
  GRPC_H2_WINDOW_BYTES,
  GRPC_H2_FRAME_BYTES_MAX,
  GRPC_H2_HEADER_BYTES_MAX,
  GRPC_H2_INBOUND_BYTES_MAX,
  GRPC_H2_WRITE_BUFFER_BYTES,
  GRPC_H2_IDLE_MS,
  GRPC_H2_KEEPALIVE_MS,
  GRPC_H2_KEEPALIVE_TIMEOUT_MS,
  GRPC_H2_PING_INTERVAL_MIN_MS,
  GRPC_H2_PING_STRIKES_MAX,
] as const;

export interface GrpcSettings {
  grpcEnabled: boolean;
  grpcPort: number;
  grpcTlsCertFile: string;
  grpcTlsKeyFile: string;
  grpcRequestBytesMax: number;
  grpcClientsMax: number;
  grpcShutdownMs: number;
  grpcAutoRenewMs: number;
  grpcAutoRenewMaxMs: number;
  grpcAutoRenewHeldMax: number;
  grpcTransport: "grpc-js" | "lean";
  grpcH2StreamsMax: number;
  grpcH2WindowBytes: number;
  grpcH2FrameBytesMax: number;
  grpcH2HeaderBytesMax: number;
  grpcH2InboundBytesMax: number;
  grpcH2WriteBufferBytes: number;
  grpcH2IdleMs: number;
  grpcH2KeepaliveMs: number;
  grpcH2KeepaliveTimeoutMs: number;
  grpcH2PingIntervalMinMs: number;
  grpcH2PingStrikesMax: number;
}

/** The gRPC settings from the environment, for split-mode functions (PORT 0 → grpcPort 0
 * unless MQ_GRPC_PORT is set, as for the broker). */
export function grpcSettingsFromEnv(env: Record<string, string | undefined>): GrpcSettings {
  const port = fromEnv(GRPC_PORT, env);
  return {
    grpcEnabled: fromEnv(GRPC_ENABLED, env),
    grpcPort: env.MQ_GRPC_PORT ? port : env.PORT === "0" ? 0 : port,
    grpcTlsCertFile: fromEnv(GRPC_TLS_CERT_FILE, env),
    grpcTlsKeyFile: fromEnv(GRPC_TLS_KEY_FILE, env),
    grpcRequestBytesMax: fromEnv(GRPC_REQUEST_BYTES_MAX, env),
    grpcClientsMax: fromEnv(GRPC_CLIENTS_MAX, env),
    grpcShutdownMs: fromEnv(GRPC_SHUTDOWN_MS, env),
    grpcAutoRenewMs: fromEnv(GRPC_AUTO_RENEW_MS, env),
    grpcAutoRenewMaxMs: fromEnv(GRPC_AUTO_RENEW_MAX_MS, env),
    grpcAutoRenewHeldMax: fromEnv(GRPC_AUTO_RENEW_HELD_MAX, env),
    grpcTransport: fromEnv(GRPC_TRANSPORT, env),
    grpcH2StreamsMax: fromEnv(GRPC_H2_STREAMS_MAX, env),
    grpcH2WindowBytes: fromEnv(GRPC_H2_WINDOW_BYTES, env),
    grpcH2FrameBytesMax: fromEnv(GRPC_H2_FRAME_BYTES_MAX, env),
    grpcH2HeaderBytesMax: fromEnv(GRPC_H2_HEADER_BYTES_MAX, env),
    grpcH2InboundBytesMax: fromEnv(GRPC_H2_INBOUND_BYTES_MAX, env),
    grpcH2WriteBufferBytes: fromEnv(GRPC_H2_WRITE_BUFFER_BYTES, env),
    grpcH2IdleMs: fromEnv(GRPC_H2_IDLE_MS, env),
    grpcH2KeepaliveMs: fromEnv(GRPC_H2_KEEPALIVE_MS, env),
    grpcH2KeepaliveTimeoutMs: fromEnv(GRPC_H2_KEEPALIVE_TIMEOUT_MS, env),
    grpcH2PingIntervalMinMs: fromEnv(GRPC_H2_PING_INTERVAL_MIN_MS, env),
    grpcH2PingStrikesMax: fromEnv(GRPC_H2_PING_STRIKES_MAX, env),
  };
}
