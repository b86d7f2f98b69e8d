// Drives Airflow's Connections UI in Debian's headless chromium and prints what it saw
// as one JSON object; tests/e2e/test_connections_ui.py makes the assertions.
//
// Input (JSON file named by argv[2]):
//   baseUrl, username, password, connectionId, connectionTypeLabel,
//   fill: {label: value} typed into the form, screenshotDir, userDataDir
import fs from "node:fs";
import path from "node:path";
import { chromium } from "playwright-core";

const input = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const report = { screenshots: [], consoleErrors: [] };
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

// `target`: the page, or one element (the dialog) to leave the empty page out.
async function shoot(target, name) {
  const file = path.join(input.screenshotDir, name);
  await target.screenshot({ path: file });
  report.screenshots.push(file);
}

// Airflow 3.3's extra fields render a label whose `for` names no element (the input's
// id is element_<name>), so a label and its control are paired by their shared field
// group instead: the nearest [data-scope=field][data-part=root] around the label.
const FIELD_ROOT = "[data-scope=field][data-part=root]";
const CONTROL = "input:not([type=hidden]), textarea";

// Every labelled field in the dialog: label text, the control's tag, type and name.
async function describeFields(dialog) {
  return dialog.locator("label").evaluateAll(
    (labels, [root, control]) =>
      labels
        .map((label) => [label, label.closest(root)?.querySelector(control)])
        .filter(([label]) => label.innerText.trim() !== "")
        .map(([label, input]) => ({
          label: label.innerText.replace("*", "").trim(),
          tag: input ? input.tagName.toLowerCase() : null,
          type: input ? input.getAttribute("type") : null,
          name: input ? input.getAttribute("name") : null,
        })),
    [FIELD_ROOT, CONTROL],
  );
}

function fieldControl(dialog, label) {
  const escaped = label.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return dialog
    .locator("label", { hasText: new RegExp(`^\\s*${escaped}\\s*\\*?\\s*$`) })
    .locator(`xpath=ancestor::*[@data-scope='field' and @data-part='root'][1]`)
    .locator(CONTROL)
    .first();
}

// The form's sections are an accordion with one section open at a time: open the one
// holding `label` before typing into it.
async function reveal(dialog, label) {
  const control = fieldControl(dialog, label);
  for (const section of ["Standard Fields", "Extra Fields"]) {
    if (await control.isVisible()) break;
    await dialog.getByRole("button", { name: section, exact: true }).click();
    await control.waitFor({ state: "visible", timeout: 5_000 }).catch(() => {});
  }
  await control.waitFor({ state: "visible" });
  return control;
}

// A toast's title and text, once one with `title` shows up.
async function toastText(page, title) {
  const toast = page.locator("[data-scope=toast][data-part=root]").filter({ hasText: title });
  await toast.first().waitFor({ timeout: 30_000 });
  return (await toast.first().innerText()).trim();
}

const context = await chromium.launchPersistentContext(input.userDataDir, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: CHROMIUM_FLAGS,
  viewport: { width: 1280, height: 2000 },
});
try {
  const page = context.pages()[0] ?? (await context.newPage());
  // Generous: CI runs this on 2 busy cores next to Airflow and the control plane.
  page.setDefaultTimeout(90_000);
  page.on("console", (message) => {
    if (message.type() === "error") report.consoleErrors.push(message.text());
  });

  await page.goto(`${input.baseUrl}/`);
  await page.getByLabel(/username/i).fill(input.username);
  await page.getByLabel(/password/i).fill(input.password);
  await page.getByRole("button", { name: /sign in/i }).click();
  await page.waitForURL((url) => !url.pathname.startsWith("/auth"));

  await page.goto(`${input.baseUrl}/connections`);
  await page.getByRole("button", { name: "Add Connection" }).click();
  const dialog = page.getByRole("dialog");
  await dialog.getByLabel("Connection ID").fill(input.connectionId);
  await dialog.getByRole("combobox", { name: /Connection Type/ }).fill(input.connectionTypeLabel);
  await page.keyboard.press("Enter");
  // Our fields live in the collapsed "Extra Fields" section.
  await dialog.getByRole("button", { name: "Extra Fields", exact: true }).click();
  await fieldControl(dialog, Object.keys(input.fill).at(-1)).waitFor();
  // What the Connection Type picker shows once chosen (its field group's text).
  report.selectedType = (
    await dialog
      .locator("label", { hasText: /^\s*Connection Type/ })
      .locator(`xpath=ancestor::*[@data-scope='field' and @data-part='root'][1]`)
      .innerText()
  ).replace("Connection Type", "").replace("*", "").split("\n").map((l) => l.trim()).filter(Boolean)[0];
  report.fields = await describeFields(dialog);
  await shoot(dialog, "connection-form-fields.png");

  // Standard section first (it holds the relabelled host), then the extra fields.
  const entries = Object.entries(input.fill);
  await (await reveal(dialog, entries[0][0])).fill(entries[0][1]);
  await shoot(dialog, "connection-form-standard.png");
  for (const [label, value] of entries.slice(1)) {
    await (await reveal(dialog, label)).fill(value);
  }
  await shoot(dialog, "connection-form-extra.png");

  const [saved] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith("/api/v2/connections") && r.request().method() === "POST"),
    dialog.getByRole("button", { name: "Save" }).click(),
  ]);
  report.save = { status: saved.status(), request: JSON.parse(saved.request().postData() ?? "{}") };
  const row = page.getByRole("row").filter({ hasText: input.connectionId });
  await row.waitFor();
  // The list needs no 2000-pixel-tall page.
  await page.setViewportSize({ width: 1280, height: 720 });
  await shoot(page, "connection-list.png");

  // Airflow 3.3.2's row "Test" button posts port: Number(null) == 0 for a connection
  // without a port, and the API then refuses with 400 "host or port ... differs"
  // (apache/airflow#73298, fixed upstream after 3.3.2 by treating 0 as no port). Until
  // then, drop that port: 0 so the request means what the UI intended.
  await page.route("**/api/v2/connections/test", async (route) => {
    const body = JSON.parse(route.request().postData() ?? "{}");
    report.testRequestPort = body.port ?? null;
    if (body.port === 0) delete body.port;
    await route.continue({ postData: JSON.stringify(body) });
  });
  const [tested] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith("/api/v2/connections/test")),
    row.getByRole("button", { name: "Test Connection" }).click(),
  ]);
  report.test = { status: tested.status(), body: await tested.json() };
  report.testToast = await toastText(page, "Test Connection");
  await shoot(page, "connection-test.png");

  // Reopen the saved connection: a stored secret must come back masked, not in clear.
  await page.setViewportSize({ width: 1280, height: 2000 });
  await row.getByRole("button", { name: "Edit Connection" }).click();
  const editDialog = page.getByRole("dialog");
  await editDialog.getByLabel("Connection ID").waitFor();
  report.editFields = await describeFields(editDialog);
  report.editValues = {};
  for (const label of Object.keys(input.fill)) {
    report.editValues[label] = await (await reveal(editDialog, label)).inputValue();
  }
  await shoot(editDialog, "connection-edit.png");
} finally {
  await context.close();
}
process.stdout.write(JSON.stringify(report));
