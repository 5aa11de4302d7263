// CRC-32 (IEEE 802.3, zlib's), the checksum of records, checkpoints and replication frames.
// Native on both runtimes: Bun's own Bun.hash.crc32 where it exists, else node:zlib's,
// loaded on first use. On Bun, loading node:zlib for the one function cost 3.5–6 MiB in a
// bare script and 0.3–0.5 MiB of an idle broker's RSS (bench/README.md, "Round 6 … idle
// RSS"); both agree on every input and run at the same speed (~0.02 µs a KiB). This is a
// pure function, not file access, so storage's rule of no runtime calls (file_port.ts) is
// kept in spirit: nothing here reaches the disk.
import process from "node:process";
import type * as NodeZlib from "node:zlib";

type Crc32 = (bytes: Uint8Array) => number;

function pick(): Crc32 {
  // deno-lint-ignore no-explicit-any
  const bunHash = (globalThis as any).Bun?.hash;
  if (typeof bunHash?.crc32 === "function") return (bytes) => bunHash.crc32(bytes);
  return (process.getBuiltinModule("node:zlib") as typeof NodeZlib).crc32;
}

let impl: Crc32 | undefined;

/** zlib's crc32 of `bytes`, unsigned (0 … 2³²−1). */
export function crc32(bytes: Uint8Array): number {
  return (impl ??= pick())(bytes);
}
