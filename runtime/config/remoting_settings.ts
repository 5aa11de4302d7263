// Settings of the RocketMQ remoting front end (functions/remoting/): the NameServer and
// broker ports RocketMQ 4.x clients connect to, frame and connection limits.
import { boolSetting, intSetting, textSetting } from "../protocol/setting.ts";

export const REMOTING_SETTINGS = [
  boolSetting("remotingEnable", "MQ_REMOTING", {
    default: true,
    doc: "Serve the RocketMQ remoting protocol (NameServer and broker roles) beside HTTP.",
  }),
  intSetting("namesrvPort", "MQ_NAMESRV_PORT", {
    default: 9876,
    max: 65535,
    doc: "NameServer role's TCP port (0 picks a free port; the listening line prints it).",
    rocketmq: "listenPort (namesrv)",
  }),
  intSetting("remotingPort", "MQ_REMOTING_PORT", {
    default: 10911,
    max: 65535,
    doc: "Broker role's remoting TCP port (0 picks a free port; the listening line prints it).",
    rocketmq: "listenPort",
  }),
  textSetting("remotingAdvertisedHost", "MQ_REMOTING_ADVERTISED_HOST", {
    default: "",
    defaultText: "host (127.0.0.1 when host is 0.0.0.0)",
    doc: "Host the NameServer gives clients for this broker's remoting port.",
    rocketmq: "brokerIP1",
  }),
  intSetting("remotingFrameBytesMax", "MQ_REMOTING_FRAME_BYTES_MAX", {
    unit: "bytes",
    default: 16 * 1024 * 1024,
    min: 1024,
    max: 64 * 1024 * 1024,
    doc: "Largest remoting frame; a larger length closes the connection.",
    rocketmq: "com.rocketmq.remoting.frameMaxLength",
  }),
  intSetting("remotingIdleTimeoutMs", "MQ_REMOTING_IDLE_TIMEOUT_MS", {
    unit: "ms",
    default: 120_000,
    min: 1000,
    doc: "A connection silent this long (no request, nothing in flight) is closed.",
    rocketmq: "serverChannelMaxIdleTimeSeconds",
  }),
  intSetting("remotingConnectionsMax", "MQ_REMOTING_CONNECTIONS_MAX", {
    unit: "count",
    default: 4096,
    min: 1,
    doc: "Open remoting connections (both roles); one more is closed when accepted.",
  }),
  intSetting("remotingInFlightMax", "MQ_REMOTING_IN_FLIGHT_MAX", {
    unit: "count",
    default: 1024,
    min: 1,
    why: "a push consumer keeps one held pull per assigned queue on one connection",
    doc: "Requests one connection may have in flight; more are answered SYSTEM_BUSY.",
    rocketmq: "serverAsyncSemaphoreValue",
  }),
  intSetting("remotingPopHandlesMax", "MQ_REMOTING_POP_HANDLES_MAX", {
    unit: "count",
    default: 65_536,
    min: 16,
    why: "about 200 bytes each: a 64 Ki table stays near 13 MiB",
    doc:
      "POP receipts remembered for remoting clients (their extraInfo → our receipt handle); past it the oldest is forgotten and its ACK answers NO_MESSAGE (the message comes back when its invisible time ends).",
  }),
  intSetting("remotingSubscriptionsMax", "MQ_REMOTING_SUBSCRIPTIONS_MAX", {
    unit: "count",
    default: 65_536,
    min: 16,
    why: "one small entry per (group, topic) a consumer's heartbeat names",
    doc:
      "Subscriptions (a consumer's tag expression per group and topic) remembered from remoting heartbeats, for pulls that carry none; past it the oldest is forgotten until the next heartbeat names it again.",
  }),
  boolSetting("autoCreateSubscriptionGroup", "MQ_AUTO_CREATE_GROUP", {
    default: true,
    doc: "Create a consumer group on a remoting client's first heartbeat.",
    rocketmq: "autoCreateSubscriptionGroup",
  }),
] as const;
