// The freshness rule of the bundle the start files run (runtime/bundle_stamp.ts): fresh only
// while every stamped input has the size and mtime it had at the build, and the entry's
// output exists; anything else is stale, so a stale bundle never runs.
import assert from "node:assert/strict";
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { checkBundle, STAMP_FILE, stampFiles, stampOf } from "../runtime/bundle_stamp.ts";
import { stampedInputs } from "../scripts/bundle.ts";

Deno.test("bundle stamp: fresh until an input changes size or mtime, goes, or the output goes", async () => {
  const root = mkdtempSync(`${tmpdir()}/mq-stamp-`);
  try {
    const files = await stampFiles();
    mkdirSync(`${root}/src`);
    mkdirSync(`${root}/out/runtime`, { recursive: true });
    writeFileSync(`${root}/src/a.ts`, "export const a = 1;\n");
    writeFileSync(`${root}/src/b.ts`, "export const b = 2;\n");
    writeFileSync(`${root}/out/runtime/main.js`, "// bundle\n");
    const stamp = () =>
      writeFileSync(
        `${root}/out/${STAMP_FILE}`,
        JSON.stringify(
          stampOf(files, root, ["src/a.ts", "src/b.ts"], { "src/a.ts": "runtime/main.js" }),
        ),
      );
    const check = () => checkBundle(files, root, "out", "src/a.ts");
    assert.deepEqual(check(), { stale: `no out/${STAMP_FILE}` });
    stamp();
    assert.deepEqual(check(), { bundle: "out/runtime/main.js" });
    assert.match(
      (checkBundle(files, root, "out", "src/other.ts") as { stale: string }).stale,
      /does not describe/,
    );
    // Same size, newer mtime (an edit that kept the length, a checkout, a touch).
    const t = statSync(`${root}/src/b.ts`).mtime;
    utimesSync(`${root}/src/b.ts`, t, new Date(t.getTime() + 2000));
    assert.deepEqual(check(), { stale: "src/b.ts changed" });
    stamp();
    assert.ok("bundle" in check());
    // The runtimes differ by up to 1 ms in how they round an mtime: within that, fresh.
    const stampPath = `${root}/out/${STAMP_FILE}`;
    for (const [shift, fresh] of [[1, true], [-1, true], [2, false], [-2, false]] as const) {
      stamp();
      const written = JSON.parse(readFileSync(stampPath, "utf8"));
      written.inputs["src/b.ts"][1] += shift;
      writeFileSync(stampPath, JSON.stringify(written));
      assert.deepEqual(
        check(),
        fresh ? { bundle: "out/runtime/main.js" } : { stale: "src/b.ts changed" },
        `mtime ${shift} ms off`,
      );
    }
    stamp();
    // Same mtime, other size.
    const stamped = statSync(`${root}/src/a.ts`).mtime;
    writeFileSync(`${root}/src/a.ts`, "export const a = 100;\n");
    utimesSync(`${root}/src/a.ts`, stamped, stamped);
    assert.deepEqual(check(), { stale: "src/a.ts changed" });
    stamp();
    rmSync(`${root}/src/b.ts`);
    assert.deepEqual(check(), { stale: "src/b.ts is gone" });
    writeFileSync(`${root}/src/b.ts`, "export const b = 2;\n");
    stamp();
    rmSync(`${root}/out/runtime/main.js`);
    assert.deepEqual(check(), { stale: "out/runtime/main.js is missing" });
    writeFileSync(`${root}/out/${STAMP_FILE}`, "{ not json");
    assert.deepEqual(check(), { stale: `no out/${STAMP_FILE}` });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

Deno.test("bundle stamp: a package counts by its package.json, our files one by one", () => {
  assert.deepEqual(
    stampedInputs([
      "runtime/main.ts",
      "node_modules/hono/dist/index.js",
      "node_modules/hono/dist/router.js",
      "../../main/node_modules/@hono/zod-openapi/dist/index.js",
      "node_modules/drizzle-orm/node_modules/x/y.js",
    ]),
    [
      "runtime/main.ts",
      "node_modules/hono/package.json",
      "../../main/node_modules/@hono/zod-openapi/package.json",
      "node_modules/drizzle-orm/node_modules/x/package.json",
    ],
  );
});
