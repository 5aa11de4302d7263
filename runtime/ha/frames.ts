// The replication protocol's frames (issue #7), after RocketMQ's HA wire (reference/
// rocketmq.md §15): AutoSwitchHAClient's handshake with epoch entries, the 32-byte transfer
// header (offset, epoch, epochStart, confirmOffset, body size), the slave's 8-byte max-offset
// ack, and an idle heartbeat. Ours adds a frame length and type so one decoder can frame the
// TCP byte stream both ways, and every frame carries the sender's epoch: the fencing token
// (reference/reliability.md §6.7) a receiver checks before it acts on anything else.
//
// The pieces: frame_types.ts (types, constants, FrameError), frame_codec.ts (the byte
// layouts, encode and decode) and frame_decoder.ts (framing a byte stream). Import them here.
export {
  type AckFrame,
  type Frame,
  FRAME_HEADER_BYTES,
  FrameError,
  type FrameErrorCode,
  HA_EPOCH_ENTRIES_MAX,
  HA_FRAME_BYTES_MAX,
  HA_PROTOCOL_VERSION,
  type HandshakeFrame,
  type HandshakeReplyFrame,
  type HandshakeStatus,
  type HeartbeatFrame,
  TRANSFER_HEADER_BYTES,
  type TransferFrame,
} from "./frame_types.ts";
export { decodeFrame, encodeFrame } from "./frame_codec.ts";
export { FrameDecoder } from "./frame_decoder.ts";
