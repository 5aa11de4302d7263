// storage/crc32.ts is zlib's CRC-32 on both runtimes: on Deno through node:zlib, on Bun through
// Bun.hash.crc32 (run here in a Bun process over the same inputs).
import assert from "node:assert/strict";
import { crc32 as zlibCrc32 } from "node:zlib";
import { existsSync } from "node:fs";
import { crc32 } from "./crc32.ts";

const LOCAL_BUN = new URL("../.tools/node_modules/.bin/bun", import.meta.url).pathname;
const BUN = existsSync(LOCAL_BUN) ? LOCAL_BUN : "bun";

/** Inputs of every length class, views at odd offsets among them. */
function inputs(): Uint8Array[] {
  const big = new Uint8Array(70_001).map((_, i) => (i * 131 + 17) & 255);
  return [
    new Uint8Array(0),
    new TextEncoder().encode("123456789"), // the check value 0xCBF43926
    big.subarray(3, 4),
    big.subarray(13, 77),
    big.subarray(1, 1025),
    big,
  ];
}

Deno.test('crc32: zlib\'s value on this runtime, 0xCBF43926 for "123456789"', () => {
  const all = inputs();
  assert.equal(crc32(all[1]), 0xcbf43926);
  for (const b of all) assert.equal(crc32(b), zlibCrc32(b), `length ${b.length}`);
});

Deno.test("crc32: the same values under Bun (Bun.hash.crc32)", async () => {
  const script = `import { crc32 } from ${
    JSON.stringify(new URL("./crc32.ts", import.meta.url).href)
  };
const big = new Uint8Array(70_001).map((_, i) => (i * 131 + 17) & 255);
const all = [new Uint8Array(0), new TextEncoder().encode("123456789"), big.subarray(3, 4),
  big.subarray(13, 77), big.subarray(1, 1025), big];
console.log(JSON.stringify({ bun: typeof Bun.hash.crc32, values: all.map((b) => crc32(b)) }));`;
  const file = await Deno.makeTempFile({ suffix: ".ts" });
  try {
    await Deno.writeTextFile(file, script);
    const out = await new Deno.Command(BUN, { args: ["run", file] }).output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    const got = JSON.parse(new TextDecoder().decode(out.stdout));
    assert.equal(got.bun, "function", "Bun.hash.crc32 is what Bun runs");
    assert.deepEqual(got.values, inputs().map((b) => zlibCrc32(b)));
  } finally {
    await Deno.remove(file);
  }
});
