// Structured logs: one JSON object per line on stderr, so stdout stays free for the
// machine-readable lines tests and scripts read (the "listening" line).
export type LogLevel = "debug" | "info" | "warn" | "error";
const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  (level: LogLevel, msg: string, fields?: Record<string, unknown>): void;
}

export function jsonLogger(
  options: { level: LogLevel; nowMs: () => number; write: (line: string) => void },
): Logger {
  const min = RANK[options.level];
  return (level, msg, fields) => {
    if (RANK[level] < min) return;
    options.write(
      JSON.stringify({ t: new Date(options.nowMs()).toISOString(), level, msg, ...fields }) + "\n",
    );
  };
}
