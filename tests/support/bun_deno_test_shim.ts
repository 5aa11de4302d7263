// Preloaded by `bun test` (bunfig.toml [test] preload): maps `Deno.test` onto bun:test so
// the project's `*_test.ts` files run unchanged on Bun. Deno and its `deno test` never load
// this file.
//
// Mapped: every `Deno.test` overload, `Deno.test.ignore` / `.only`, `t.step` (all three
// overloads, `ignore`), `t.name` / `t.origin` / `t.parent`, the `timeout`, `retry` and
// `repeats` options and the `Deno.test.beforeAll/beforeEach/afterEach/afterAll` hooks.
// Ignored: `sanitizeOps`, `sanitizeResources`, `sanitizeExit` and `permissions` (Bun has
// no sanitizers and no permissions). Not mapped: `Deno.test.each` throws, so a test that
// needs it fails loudly instead of vanishing.
//
// Steps behave as on Deno: a failing step resolves to `false`, later steps still run, and
// the parent fails when it ends. A step still running when its parent returns (a missing
// `await`) fails the parent, as Deno does.
//
// Only `Deno.test` is defined: code that detects Deno with `"Deno" in globalThis` sees a
// Deno under `bun test`, so detect the API you need instead (`globalThis.Deno?.openKv`).
import * as bunTest from "bun:test";

type TestFn = (t: TestContext) => void | Promise<void>;

interface TestOptions {
  ignore?: boolean;
  only?: boolean;
  timeout?: number;
  retry?: number;
  repeats?: number;
  // sanitizeOps, sanitizeResources, sanitizeExit and permissions are accepted and ignored.
  [option: string]: unknown;
}

interface TestDefinition extends TestOptions {
  name: string;
  fn: TestFn;
}

interface TestContext {
  name: string;
  origin: string;
  parent?: TestContext;
  step(a: string | TestFn | StepDefinition, b?: TestFn): Promise<boolean>;
}

interface StepDefinition {
  name: string;
  fn: TestFn;
  ignore?: boolean;
  [option: string]: unknown;
}

/** The part of bun:test this file calls (`deno check` types `bun:*` imports as `any`). */
interface BunTestApi {
  test: BunRegister & { skip: BunRegister; only: BunRegister };
  beforeAll(fn: () => unknown): void;
  beforeEach(fn: () => unknown): void;
  afterEach(fn: () => unknown): void;
  afterAll(fn: () => unknown): void;
}
type BunRegister = (
  name: string,
  fn: () => Promise<void>,
  options?: { timeout?: number; retry?: number; repeats?: number },
) => void;

const bun = bunTest as unknown as BunTestApi;

/** Folds Deno.test's five call shapes (and t.step's three) into one definition. */
function definition(a: unknown, b?: unknown, c?: unknown): TestDefinition {
  if (typeof a === "string" && typeof b === "function") return { name: a, fn: b as TestFn };
  if (typeof a === "string" && isRecord(b) && typeof c === "function") {
    return { ...b, name: a, fn: c as TestFn };
  }
  if (typeof a === "function") return { name: a.name || "<anonymous>", fn: a as TestFn };
  if (isRecord(a) && typeof b === "function") {
    const name = typeof a.name === "string" && a.name ? a.name : b.name || "<anonymous>";
    return { ...a, name, fn: b as TestFn };
  }
  if (isRecord(a) && typeof a.name === "string" && typeof a.fn === "function") {
    return a as TestDefinition;
  }
  throw new TypeError("Cannot register test: expected Deno.test's name, options and fn");
}

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

/**
 * Runs `fn` with a fresh context; throws what made it or any of its steps fail. Steps that
 * failed were already reported by their own `step()` call returning false.
 */
async function runWithSteps(
  name: string,
  path: string,
  origin: string,
  parent: TestContext | undefined,
  fn: TestFn,
): Promise<void> {
  const failures: unknown[] = [];
  let running = 0;
  const context: TestContext = {
    name,
    origin,
    parent,
    async step(a, b) {
      const step = definition(a, b);
      if (step.ignore) return false;
      running++;
      try {
        await runWithSteps(step.name, `${path} > ${step.name}`, origin, context, step.fn);
        return true;
      } catch (error) {
        failures.push(new Error(`Step failed: ${path} > ${step.name}`, { cause: error }));
        return false;
      } finally {
        running--;
      }
    },
  };
  await fn(context);
  if (running > 0) {
    failures.push(
      new Error(
        `"${path}" ended while ${running} step(s) were still running: await t.step()`,
      ),
    );
  }
  if (failures.length === 1) throw failures[0];
  if (failures.length > 1) throw new AggregateError(failures, `${failures.length} steps failed`);
}

function register(d: TestDefinition): void {
  const run = () => runWithSteps(d.name, d.name, originOf(), undefined, d.fn);
  const options = { timeout: d.timeout, retry: d.retry, repeats: d.repeats };
  if (d.ignore) bun.test.skip(d.name, run, options);
  else if (d.only) bun.test.only(d.name, run, options);
  else bun.test(d.name, run, options);
}

/** Deno sets `origin` to the test module's URL; Bun gives us the process entry at best. */
function originOf(): string {
  return (globalThis as { Bun?: { main: string } }).Bun?.main ?? "";
}

function denoTest(a: unknown, b?: unknown, c?: unknown): void {
  register(definition(a, b, c));
}
denoTest.ignore = (a: unknown, b?: unknown, c?: unknown) =>
  register({ ...definition(a, b, c), ignore: true });
denoTest.only = (a: unknown, b?: unknown, c?: unknown) =>
  register({ ...definition(a, b, c), only: true });
denoTest.each = () => {
  throw new Error("Deno.test.each is not mapped onto bun:test; write one Deno.test per case");
};
denoTest.beforeAll = (fn: () => unknown) => bun.beforeAll(fn);
denoTest.beforeEach = (fn: () => unknown) => bun.beforeEach(fn);
denoTest.afterEach = (fn: () => unknown) => bun.afterEach(fn);
denoTest.afterAll = (fn: () => unknown) => bun.afterAll(fn);

const g = globalThis as { Deno?: { test?: unknown } };
if (g.Deno === undefined) g.Deno = { test: denoTest };
