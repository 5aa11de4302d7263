// Opens a page in headless Chromium (/usr/bin/chromium, or CHROMIUM) through
// puppeteer-core and prints what its produce answered: `node run.mjs <url>`.
import puppeteer from "puppeteer-core";

const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
try {
  const page = await browser.newPage();
  await page.goto(process.argv[2]);
  await page.waitForFunction(() => globalThis.edgemqResult !== undefined, { timeout: 15_000 });
  console.log(JSON.stringify(await page.evaluate(() => globalThis.edgemqResult)));
} finally {
  await browser.close();
}
