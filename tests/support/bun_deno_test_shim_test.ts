// Runs bun_deno_test_shim_cases.ts under `bun test` (which preloads the shim through
// bunfig.toml) and checks that every case ends as its name says.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import process from "node:process";
import { ChildRun, REPO_ROOT, runtimeBinary } from "../harness/process.ts";

Deno.test("bun_deno_test_shim.ts maps Deno.test, steps, options and hooks onto bun:test", async () => {
  const child = spawn(
    runtimeBinary("bun"),
    ["test", "--timeout", "20000", "./tests/support/bun_deno_test_shim_cases.ts"],
    { cwd: REPO_ROOT, env: { ...process.env, NO_COLOR: "1" }, stdio: ["ignore", "pipe", "pipe"] },
  );
  await using run = new ChildRun(child, "bun test bun_deno_test_shim_cases.ts");
  const exit = await run.exited;
  const output = [...run.lines, ...run.stderr.join("").split("\n")].join("\n");

  // "(pass) pass: name and fn [0.56ms]": the outcome, then the case name, which starts
  // with the outcome the case must have.
  const results = [...output.matchAll(/^\((pass|fail|skip)\) (.+?)(?: \[[\d.]+m?s\])?$/gm)];
  const wrong = results.filter(([, outcome, name]) =>
    !name.startsWith(`${outcome}:`) && !(outcome === "pass" && name === "pass_named_function")
  );
  assert.deepEqual(wrong.map((r) => r[0]), [], output);
  const count = (outcome: string) => results.filter((r) => r[1] === outcome).length;
  assert.deepEqual([count("pass"), count("fail"), count("skip")], [8, 4, 2], output);
  assert.equal(exit.code, 1, "bun test fails when a case fails");

  assert.match(output, /^LATER-STEP-RAN$/m);
  assert.match(output, /^AFTER-ALL 12$/m, "afterEach ran after each of the 12 tests that ran");
  assert.match(output, /Step failed: fail: a failing step returns false, .* > breaks$/m);
  assert.match(output, /Step failed: fail: a failing nested step .* > outer > inner$/m);
  assert.match(
    output,
    /Step failed: fail: a failing nested step fails each step above it > outer$/m,
  );
  assert.match(output, /ended while 1 step\(s\) were still running: await t\.step\(\)$/m);
});
