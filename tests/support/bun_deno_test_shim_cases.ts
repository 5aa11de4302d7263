// Cases for bun_deno_test_shim_test.ts, which runs this file with `bun test` (the name
// does not end in _test.ts, so neither runner picks it up on its own). Each test name
// starts with the outcome the shim must produce: "pass:", "fail:" or "skip:".
import assert from "node:assert/strict";

const events: string[] = [];
Deno.test.beforeAll(() => void events.push("beforeAll"));
Deno.test.beforeEach(() => void events.push("beforeEach"));
Deno.test.afterEach(() => void events.push("afterEach"));
Deno.test.afterAll(() =>
  console.log(`AFTER-ALL ${events.filter((e) => e === "afterEach").length}`)
);

Deno.test("pass: name and fn", () => {});
Deno.test({ name: "pass: definition object", fn() {} });
Deno.test("pass: name, options, fn", { sanitizeOps: false, permissions: "none" }, () => {});
Deno.test({ name: "pass: options with name, and fn", sanitizeResources: false }, () => {});
Deno.test(function pass_named_function() {});
Deno.test({
  name: "skip: ignore option",
  ignore: true,
  fn() {
    throw new Error("an ignored test ran");
  },
});
Deno.test.ignore("skip: Deno.test.ignore", () => {
  throw new Error("an ignored test ran");
});

Deno.test("pass: hooks run around each test", () => {
  assert.equal(events[0], "beforeAll");
  assert.equal(events.at(-1), "beforeEach");
});

Deno.test("pass: steps run in order, know their names and parents, and report success", async (t) => {
  const order: string[] = [];
  assert.equal(
    t.name,
    "pass: steps run in order, know their names and parents, and report success",
  );
  assert.equal(t.parent, undefined);
  const one = await t.step("one", (s) => {
    assert.equal(s.parent, t);
    order.push(s.name);
  });
  const two = await t.step({
    name: "two",
    fn: async (s) => {
      order.push(s.name);
      await s.step("nested", (n) => void order.push(`${n.name} in ${n.parent!.name}`));
    },
  });
  const three = await t.step(function three() {
    order.push("three");
  });
  const ignored = await t.step({
    name: "ignored",
    ignore: true,
    fn: () => {
      throw new Error("an ignored step ran");
    },
  });
  assert.deepEqual([one, two, three, ignored], [true, true, true, false]);
  assert.deepEqual(order, ["one", "two", "nested in two", "three"]);
});

Deno.test("fail: a failing step returns false, later steps run, the parent fails", async (t) => {
  assert.equal(await t.step("breaks", () => assert.fail("step broke")), false);
  assert.equal(await t.step("still runs", () => void console.log("LATER-STEP-RAN")), true);
});

Deno.test("fail: a failing nested step fails each step above it", async (t) => {
  const outer = await t.step("outer", async (s) => {
    assert.equal(await s.step("inner", () => assert.fail("inner broke")), false);
  });
  assert.equal(outer, false);
});

Deno.test("fail: a step still running when the test returns fails the test", (t) => {
  t.step("slow", () => new Promise((resolve) => setTimeout(resolve, 50)));
});

Deno.test({
  name: "fail: the timeout option reaches bun",
  timeout: 50,
  fn: () => new Promise((resolve) => setTimeout(resolve, 5000)),
});

Deno.test("pass: Deno.test.each is refused loudly", () => {
  assert.throws(() => Deno.test.each([1]), /Deno.test.each is not mapped onto bun:test/);
});
