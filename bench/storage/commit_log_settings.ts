// Settings of the CommitLog bench: flags, message counts (scaled down by --quick), and the
// settings block it prints first.
import * as os from "node:os";
import { MIB } from "../../storage/config.ts";
import { appenders, commandLine, count, runtimeInfo, say } from "../support.ts";

export interface Settings {
  quick: boolean;
  json: boolean;
  msgBytes: number;
  segmentBytes: number;
  yieldEveryMs: number;
  asyncCounts: { one: number; many: number; manyAppenders: number };
  /** SYNC_FLUSH runs: [appenders, messages]. */
  syncCounts: [number, number][];
  serialFsyncCount: number;
  warmupCount: number;
  recoveryBytes: number;
  baseDir: string;
}

export function readSettings(): Settings {
  const flags = commandLine();
  const quick = flags.has("quick");
  const scale = quick ? 0.3 : 1;
  const n = (full: number) => Math.round(full * scale);
  return {
    quick,
    json: flags.has("json"),
    msgBytes: flags.number("msg-bytes", 1024),
    segmentBytes: flags.number("segment-mib", 1024) * MIB,
    yieldEveryMs: flags.number("yield-ms", 5),
    asyncCounts: { one: n(300_000), many: n(600_000), manyAppenders: 64 },
    syncCounts: [[1, n(4_000)], [16, n(40_000)], [256, n(300_000)]],
    serialFsyncCount: n(4_000),
    warmupCount: n(30_000),
    recoveryBytes: flags.number("recovery-mib", quick ? 64 : 256) * MIB,
    baseDir: flags.string("dir", os.tmpdir()),
  };
}

export function printSettings(s: Settings, dataDir: string) {
  const rt = runtimeInfo();
  say(`CommitLog bench (${s.quick ? "quick" : "full"} run)`);
  say(
    `  runtime        ${rt.name} ${rt.version} on ${os.platform()} ${os.release()}, ` +
      `${os.cpus().length} cpus, ${Math.round(os.totalmem() / 2 ** 30)} GiB`,
  );
  say(`  message        ${s.msgBytes} B body (record = body + ~100 B header and topic)`);
  say(`  segment        ${s.segmentBytes / MIB} MiB (mappedFileSizeCommitLog)`);
  say(
    `  async counts   1 appender ${count(s.asyncCounts.one)}, ` +
      `${s.asyncCounts.manyAppenders} appenders ${count(s.asyncCounts.many)}`,
  );
  const sync = s.syncCounts.map(([a, n]) => `${appenders(a)} ${count(n)}`).join(", ");
  say(`  sync counts    ${sync}; serial fdatasync ${count(s.serialFsyncCount)}`);
  say(`  recovery       ${s.recoveryBytes / MIB} MiB unflushed tail`);
  say(`  event loop     appenders yield a turn every ${s.yieldEveryMs} ms`);
  say(`  data dir       ${dataDir}`);
}
