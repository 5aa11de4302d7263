// The dashboard in a real browser: headless Chromium (Debian's chromium, installed by
// scripts/install.sh) drives /dashboard on a real broker with an admin key, checks what a
// person sees after producing and consuming, redrives a DLQ from the page, and saves
// screenshots in tests/artifacts/. Skipped, with the reason printed, without Chromium.
import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import puppeteer, { type Page } from "puppeteer-core";
import { startBroker } from "./harness/broker.ts";
import { REPO_ROOT } from "./harness/process.ts";

const CHROMIUM = "/usr/bin/chromium";
const TOKEN = "dashboard-admin-key-0123456789";
const ARTIFACTS = `${REPO_ROOT}/tests/artifacts`;
const absent = !existsSync(CHROMIUM);
if (absent) console.log(`dashboard browser test skipped: ${CHROMIUM} is not installed`);

async function textOf(page: Page, selector: string): Promise<string> {
  await page.waitForSelector(selector, { timeout: 15_000 });
  return page.$eval(selector, (e) => e.textContent ?? "");
}

/** Waits until `selector`'s text satisfies `test` (the page re-renders every 3 s). */
async function waitText(page: Page, selector: string, test: (t: string) => boolean) {
  const deadline = Date.now() + 15_000;
  let last = "";
  while (Date.now() < deadline) {
    last = await page.$eval(selector, (e) => e.textContent ?? "").catch(() => "");
    if (test(last)) return last;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${selector} never matched; last text: ${last}`);
}

Deno.test({
  name: "dashboard in headless Chromium: values after traffic, redrive empties the DLQ",
  ignore: absent,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await using broker = await startBroker("deno", {
      env: {
        MQ_API_KEYS: JSON.stringify([{ key: TOKEN, name: "admin", admin: true }]),
        MQ_WEBHOOK_ALLOW_HOSTS: "127.0.0.1",
      },
      token: TOKEN,
    });
    const mq = broker.client;
    await mq.upsertTopic("Orders", { readQueueNums: 1, writeQueueNums: 1 });
    // A webhook to a closed port: its deliveries fail, and the page shows the failures.
    await mq.upsertSubscription("hooked", { topic: "Orders", url: "http://127.0.0.1:1/hook" });
    await mq.createSchedule({ topic: "Orders", cron: "0 0 1 1 *", message: { body: "yearly" } });
    for (let i = 0; i < 5; i++) await mq.produce("Orders", { body: `order ${i}` });
    await mq.upsertGroup("billing");
    await mq.pull("Orders", 0, { offset: 0, max: 2, group: "billing" });
    await mq.commitOffset("billing", "Orders", 0, 2);
    // A group that gives up at once: a nacked message goes to its DLQ.
    await mq.upsertGroup("failing", { retryMaxTimes: 0 });
    const [got] = await mq.receive("failing", { topic: "Orders", max: 1 });
    await mq.nack("failing", got.receiptHandle);
    for (let i = 0; i < 50 && (await mq.listDlq("failing")).messages.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal((await mq.listDlq("failing")).messages.length, 1, "no dead letter to redrive");

    mkdirSync(ARTIFACTS, { recursive: true });
    const browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
    });
    try {
      const page = await browser.newPage();
      await page.setViewport({ width: 1280, height: 900 });
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(String(e)));

      // Without a key: the page asks for one (the API's auth, nothing else).
      await page.goto(`${broker.url}/dashboard`);
      await page.waitForSelector("input#token", { timeout: 15_000 });
      await page.type("input#token", TOKEN);
      await page.click("form.login button");

      await waitText(page, "#ov-produced", (t) => t === "5");
      assert.equal(await textOf(page, "#ov-topics"), "1");
      assert.equal(await textOf(page, "#ov-groups"), "3");
      await waitText(page, "#ov-lag", (t) => Number(t) >= 3);
      assert.ok(await page.$("#rates canvas"), "no rate chart drawn");
      await page.screenshot({ path: `${ARTIFACTS}/dashboard-overview.png`, fullPage: true });

      await page.goto(`${broker.url}/dashboard#/topics`);
      const topics = await waitText(
        page,
        "main[data-page=topics] table",
        (t) => t.includes("Orders"),
      );
      assert.match(topics, /Orders15/, "topic row shows 1 queue and 5 messages");

      await page.goto(`${broker.url}/dashboard#/groups`);
      const groups = await waitText(page, "main[data-page=groups]", (t) => t.includes("billing"));
      assert.match(groups, /billingCLUSTERINGOrders3/, "billing shows a lag of 3");
      await page.screenshot({ path: `${ARTIFACTS}/dashboard-groups.png`, fullPage: true });

      await page.goto(`${broker.url}/dashboard#/dlq`);
      await waitText(page, "section[data-dlq=failing] .count", (t) => t === "1");
      await page.screenshot({ path: `${ARTIFACTS}/dashboard-dlq-before.png`, fullPage: true });
      await page.click("section[data-dlq=failing] button.redrive");
      await waitText(page, "section[data-dlq=failing] .count", (t) => t === "0");
      assert.equal((await mq.listDlq("failing")).messages.length, 0, "the DLQ is not empty");
      await page.screenshot({ path: `${ARTIFACTS}/dashboard-dlq-after.png`, fullPage: true });

      await page.goto(`${broker.url}/dashboard#/webhooks`);
      await waitText(page, "main[data-page=webhooks]", (t) => t.includes("127.0.0.1:1/hook"));
      await page.waitForSelector("main[data-page=webhooks] tr.fail", { timeout: 20_000 });
      await page.screenshot({ path: `${ARTIFACTS}/dashboard-webhooks.png`, fullPage: true });

      await page.goto(`${broker.url}/dashboard#/scheduled`);
      await waitText(page, "main[data-page=scheduled] table", (t) => t.includes("0 0 1 1 *"));

      await page.goto(`${broker.url}/dashboard#/cluster`);
      await waitText(page, "main[data-page=cluster] table", (t) => t.includes("master"));
      assert.deepEqual(errors, [], "the page threw");
    } finally {
      await browser.close();
    }
  },
});
