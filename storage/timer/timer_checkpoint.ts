// The timer checkpoint (RocketMQ config/timercheck), written atomically (tmp, fdatasync,
// rename, fsync dir) after the timer log was flushed. Big-endian, 56 bytes:
//
//    0 int  version               1
//    4 long readTimeMs            every timer of a slot <= it had been handed out
//   12 long consumedQueueOffset   the caller's: timers it fed before this had all been added
//   20 long logFlushedPos         timer-log bytes below it were durable (lastTimerLogFlushPos)
//   28 long precisionMs           \
//   36 long fineWindowMs           | the wheel geometry the log was written with: slots
//   44 long coarsePrecisionMs      | are numbered by it, so it may not change under the log
//   52 int  crc32 of bytes 0..51  /  (horizonMs may: it only sizes the coarse wheel)
import { crc32 } from "../crc32.ts";
import type { FilePort } from "../file_port.ts";
import { readWholeFile, writeFileAtomic } from "../file_port.ts";
import { getLong, setLong } from "../message/record.ts";
import { TimerError, type WheelGeometry } from "./timer_config.ts";

const VERSION = 1;
const CRC_AT = 52;
const BYTES = 56;

export interface TimerCheckpointState {
  readTimeMs: number;
  consumedQueueOffset: number;
  logFlushedPos: number;
}

export async function writeTimerCheckpoint(
  files: FilePort,
  path: string,
  state: TimerCheckpointState,
  geometry: WheelGeometry,
): Promise<void> {
  const bytes = new Uint8Array(BYTES);
  const view = new DataView(bytes.buffer);
  view.setInt32(0, VERSION);
  setLong(view, 4, state.readTimeMs);
  setLong(view, 12, state.consumedQueueOffset);
  setLong(view, 20, state.logFlushedPos);
  setLong(view, 28, geometry.precisionMs);
  setLong(view, 36, geometry.fineWindowMs);
  setLong(view, 44, geometry.coarsePrecisionMs);
  view.setUint32(CRC_AT, crc32(bytes.subarray(0, CRC_AT)));
  await writeFileAtomic(files, path, bytes);
}

/** The saved state, or undefined if none was ever written. Written by rename, the file is
 * whole or absent: a bad CRC is damage and refuses the open, as does another geometry. */
export function readTimerCheckpoint(
  files: FilePort,
  path: string,
  geometry: WheelGeometry,
): TimerCheckpointState | undefined {
  const bytes = readWholeFile(files, path);
  if (bytes === null) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (
    bytes.length !== BYTES || view.getInt32(0) !== VERSION ||
    view.getUint32(CRC_AT) !== crc32(bytes.subarray(0, CRC_AT))
  ) {
    throw new TimerError(
      "TIMER_CHECKPOINT_CORRUPT",
      `Cannot read timer checkpoint ${path} as its length ${bytes.length}, version or CRC is wrong`,
    );
  }
  const saved = [getLong(view, 28), getLong(view, 36), getLong(view, 44)];
  const wanted = [geometry.precisionMs, geometry.fineWindowMs, geometry.coarsePrecisionMs];
  if (saved.some((v, i) => v !== wanted[i])) {
    throw new TimerError(
      "TIMER_CONFIG_CHANGED",
      `Cannot open the timer store as precisionMs, fineWindowMs, coarsePrecisionMs ${
        wanted.join(", ")
      } differ from ${saved.join(", ")} its log was written with`,
    );
  }
  return {
    readTimeMs: getLong(view, 4),
    consumedQueueOffset: getLong(view, 12),
    logFlushedPos: getLong(view, 20),
  };
}
