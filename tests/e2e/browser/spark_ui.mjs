// Follows a task's "Spark UI" link in Airflow's UI, in Debian's headless chromium, and
// prints what it saw as one JSON object; tests/e2e/test_spark_ui_airflow.py judges.
//
// Input (JSON file named by argv[2]):
//   baseUrl, username, password, taskInstancePath, screenshotDir, userDataDir,
//   phase: "live" (the running driver: Jobs, then Executors, then a kill) or "history" (the driver
//   gone: the History Server's Jobs page, then its Environment's spark.app.id)
import fs from "node:fs";
import path from "node:path";
import { chromium } from "playwright-core";

const input = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const report = { screenshots: [], consoleErrors: [], responses: [] };
const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

async function shoot(page, name) {
  const file = path.join(input.screenshotDir, name);
  await page.screenshot({ path: file });
  report.screenshots.push(file);
}

const context = await chromium.launchPersistentContext(input.userDataDir, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: CHROMIUM_FLAGS,
  viewport: { width: 1280, height: 800 },
});
try {
  // Every answer under the plugin's path, in any tab: the Spark page's own assets too.
  context.on("response", (response) => {
    const url = new URL(response.url());
    if (url.pathname.startsWith("/sparkk8s/")) {
      report.responses.push({
        path: url.pathname,
        method: response.request().method(),
        status: response.status(),
        type: response.headers()["content-type"] ?? "",
        csp: response.headers()["content-security-policy"] ?? null,
      });
    }
  });
  const page = context.pages()[0] ?? (await context.newPage());
  // Generous: CI runs this on 2 busy cores next to Airflow, the node and the driver.
  page.setDefaultTimeout(90_000);

  await page.goto(`${input.baseUrl}/`);
  await page.getByLabel(/username/i).fill(input.username);
  await page.getByLabel(/password/i).fill(input.password);
  await page.getByRole("button", { name: /sign in/i }).click();
  await page.waitForURL((url) => !url.pathname.startsWith("/auth"));

  // The task instance's Details tab lists its extra links.
  await page.goto(`${input.baseUrl}${input.taskInstancePath}/details`);
  const link = page.getByRole("link", { name: "Spark UI" }).first();
  await link.waitFor();
  report.linkHref = await link.getAttribute("href");
  report.linkTarget = await link.getAttribute("target");
  const history = input.phase === "history";
  if (!history) await shoot(page, "spark-ui-task-instance.png");

  // Airflow opens a link to its own origin in the same tab, any other in a new one.
  let spark = page;
  if (report.linkTarget === "_blank") {
    [spark] = await Promise.all([context.waitForEvent("page"), link.click()]);
  } else {
    await link.click();
  }
  spark.setDefaultTimeout(90_000);
  spark.on("console", (message) => {
    if (message.type() === "error") report.consoleErrors.push(message.text());
  });
  await spark.getByText("Spark Jobs", { exact: false }).first().waitFor();
  await spark.waitForLoadState("load");
  report.jobsUrl = spark.url();
  report.jobsTitle = await spark.title();
  report.jobsText = await spark.locator("body").innerText();
  // Spark's stylesheet applied: its navbar is styled, not the browser's default block.
  report.stylesheets = await spark.evaluate(() =>
    [...document.styleSheets].map((sheet) => ({
      href: sheet.href,
      rules: (() => {
        try {
          return sheet.cssRules.length;
        } catch {
          return -1;
        }
      })(),
    })),
  );
  await shoot(spark, history ? "spark-ui-history-jobs.png" : "spark-ui-jobs.png");

  if (history) {
    // The application's own id, as the History Server's Environment page lists it.
    await spark.getByRole("link", { name: "Environment", exact: true }).first().click();
    await spark.locator("td", { hasText: "spark.app.id" }).first().waitFor({ state: "attached" });
    report.environmentUrl = spark.url();
    report.environmentAppId = await spark.evaluate(() => {
      for (const row of document.querySelectorAll("tr")) {
        const cells = row.querySelectorAll("td");
        if (cells.length >= 2 && cells[0].textContent.trim() === "spark.app.id") {
          return cells[1].textContent.trim();
        }
      }
      return null;
    });
  } else {
    // The Executors page draws its table from the REST API in the browser (setUIRoot).
    await spark.getByRole("link", { name: "Executors", exact: true }).first().click();
    await spark.locator("#active-executors-table tbody tr").first().waitFor();
    report.executorsUrl = spark.url();
    report.executorsText = await spark.locator("#active-executors-table").innerText();
    await shoot(spark, "spark-ui-executors.png");

    // The running job's kill form (Spark 4.3: a POST with the page's CSRF token, after a
    // confirm): the plugin refuses it with its reason, and the job runs on.
    await spark.getByRole("link", { name: "Jobs", exact: true }).first().click();
    const killForm = spark.locator('form[action*="/jobs/job/kill/"]').first();
    await killForm.waitFor({ state: "attached" });
    report.killAction = await killForm.getAttribute("action");
    report.killHasToken = (await killForm.locator('input[name="csrfToken"]').count()) > 0;
    spark.on("dialog", (dialog) => dialog.accept());
    await Promise.all([
      spark.waitForURL((url) => url.pathname.endsWith("/jobs/job/kill/")),
      killForm.evaluate((form) => form.requestSubmit()),
    ]);
    await spark.waitForLoadState("load");
    report.killUrl = spark.url();
    report.killText = await spark.locator("body").innerText();
  }
} catch (error) {
  for (const open of context.pages()) await shoot(open, `failure-${report.screenshots.length}.png`);
  throw error;
} finally {
  await context.close();
}
process.stdout.write(JSON.stringify(report));
