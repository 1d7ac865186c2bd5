/**
 * The console's Keys section (issue 24) in a real headless Chromium against the real service on the devnet, with the
 * real DNS server: anyone checks a key's status; a test EIP-1193 wallet signs in, registers a signing key, sees its
 * trust for its subject and raises it step by step with the console's own buttons (the TXT record shown, the witness
 * requested, the key binding signed and sent through the private relay), each step read back from the chain.
 * Screenshots at 1280 and 360 px go to e2e/screenshots/.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import type { Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { ANVIL_DEV_KEYS } from "../adapters/devnet/mod.ts";
import type { Service } from "../app/service.ts";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { freePort, type Stack, startStack } from "./harness.ts";
import { injectWallet, walletAnswers } from "./support/browser_wallet.ts";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const HAVE_CHROMIUM = existsSync(CHROMIUM);
const IN_CI = process.env.CI === "true" || process.env.CI === "1";
if (!HAVE_CHROMIUM && IN_CI) throw new Error(`CI=true but Chromium is not installed at ${CHROMIUM} (apt-get install chromium)`);
const describeBrowser = HAVE_CHROMIUM ? describe : describe.skip;
const SCREENSHOT_DIR = join(import.meta.dir, "screenshots");
const WIDTHS = [1280, 360] as const;

let dns: DnsServer;
let stack: Stack;
let service: Service;
let browser: Browser;
// An Anvil dev key no other role here uses; the relay and the witness pay the gas.
const user = privateKeyToAccount(ANVIL_DEV_KEYS[7]! as Hex);
const userDid = `did:pkh:eip155:31337:${user.address.toLowerCase()}`;
const KEY = `did:pkh:eip155:31337:${privateKeyToAccount(generatePrivateKey()).address.toLowerCase()}`;
const SUBJECT = "did:web:keys-console.test";

beforeAll(async () => {
  if (!HAVE_CHROMIUM) return;
  dns = await startDnsServer();
  // The wallet is a controller; the signing key is not published yet.
  dns.setTxt("_controllers.keys-console.test", [[`v=1;controller=${userDid}`]]);
  stack = await startStack({
    env: {
      DNS_SERVERS: dns.address,
      ALLOW_PRIVATE_NETWORK: "true",
      DISCOVERY_CACHE_SECONDS: "0",
      FREE_PLAN_SCHEMAS: "*",
      FREE_PLAN_ANNUAL_WRITES: "10",
      SIWE_CHALLENGE_RATE_PER_MINUTE: "1000",
    },
  });
  // A fixed port: the page's origin is the service's public origin (SIWE domain and the private routes' origin check).
  service = await stack.restartService({ PORT: String(freePort()) });
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
  await dns?.stop();
});

async function open(hash: string): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(`pageerror: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error" && !/Failed to load resource/.test(message.text())) problems.push(`console: ${message.text()}`);
  });
  page.on("request", (request) => {
    if (!request.url().startsWith(service.url) && !request.url().startsWith("data:")) problems.push(`foreign request: ${request.url()}`);
  });
  await injectWallet(page, walletAnswers(user));
  await page.goto(`${service.url}/#${hash}`);
  await page.waitForSelector("html[data-ready=true]");
  return { page, problems };
}

async function screenshots(page: Page, name: string): Promise<void> {
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: 900 });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect({ name, width, overflow }).toEqual({ name, width, overflow: 0 });
    await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

const statusOf = async (page: Page, id: string) => {
  await page.waitForFunction((sel) => /\b(ok|warn|error)\b/.test(document.getElementById(sel)!.className), id, { timeout: 30_000 });
  return await page.locator(`#${id}`).innerText();
};
const subjectRow = (page: Page) => page.locator(`article.signing-key[data-key="${KEY}"] li[data-subject="${SUBJECT}"]`);

describeBrowser("the console's Keys section in a browser", () => {
  test("register a key, see its trust per subject and raise it step by step; check any key publicly", async () => {
    const { page, problems } = await open("keys");
    expect(await page.locator("#keys-signed-out").isVisible()).toBe(true);
    await screenshots(page, "keys-signed-out");

    // Sign in (Account), add the domain as a subject (the wallet is its controller by DNS), then the Keys section.
    await page.goto(`${service.url}/#account`);
    await page.click('#wallet-list button[data-wallet="test.ats.wallet"]');
    expect(await statusOf(page, "account-status")).toBe(`Signed in as ${user.address}`);
    await page.fill("#subject-did", "keys-console.test");
    await page.click('#subject-form button[type="submit"]');
    expect(await statusOf(page, "subject-status")).toContain(`Added ${SUBJECT}`);
    await page.goto(`${service.url}/#keys`);
    expect(await page.locator("#keys-panel").isVisible()).toBe(true);

    await page.fill("#key-did", KEY);
    await page.fill("#key-name", "x402 receipt signer");
    await page.fill("#key-tags", "x402, mcp");
    await page.click('#key-form button[type="submit"]');
    expect(await statusOf(page, "key-status")).toBe("Registered x402 receipt signer");
    // None: the next step is the TXT record naming the key, shown exactly.
    expect([await subjectRow(page).getAttribute("data-status"), await subjectRow(page).getAttribute("data-trust")]).toEqual(["registered", "none"]);
    expect(await subjectRow(page).locator(".key-txt-value").innerText()).toBe(`v=1;controller=${KEY}`);
    await screenshots(page, "keys-registered");

    // Publish it: basic, and the next step is the witness, requested with the console's button.
    dns.setTxt("_controllers.keys-console.test", [[`v=1;controller=${userDid};controller=${KEY}`]]);
    await page.click('#key-form button[type="submit"]');
    expect(await statusOf(page, "key-status")).toBe("Updated x402 receipt signer");
    expect(await subjectRow(page).getAttribute("data-trust")).toBe("basic");
    await subjectRow(page).locator("button.key-witness").click();
    expect(await statusOf(page, "key-status")).toMatch(/^Witness written: uid 0x[0-9a-f]{64}$/);
    expect(await subjectRow(page).getAttribute("data-trust")).toBe("intermediate");

    // The key binding, signed in the wallet and sent through the private relay: advanced.
    await subjectRow(page).locator("button.key-bind").click();
    expect(await statusOf(page, "key-status")).toMatch(/^Key binding written: uid 0x[0-9a-f]{64}$/);
    expect([await subjectRow(page).getAttribute("data-status"), await subjectRow(page).getAttribute("data-trust")]).toEqual(["active", "advanced"]);
    expect(await subjectRow(page).locator(".next-step").innerText()).toBe("Nothing more: the key is witnessed and bound.");
    await screenshots(page, "keys-advanced");

    // The public check, with a domain as typed by a person.
    await page.fill("#key-check-subject", "keys-console.test");
    await page.fill("#key-check-key", KEY);
    await page.click('#key-check-form button[type="submit"]');
    expect(await statusOf(page, "key-check-status")).toBe("Checked: active, trust advanced");
    const card = page.locator("#key-check-card");
    expect([await card.getAttribute("data-status"), await card.getAttribute("data-trust")]).toEqual(["active", "advanced"]);
    expect(await card.innerText()).toContain("names the key (dns-txt)");
    // A time before anything was written: registered, and trust from today's evidence only.
    await page.fill("#key-check-at", "2024-01-01T00:00:00");
    await page.click('#key-check-form button[type="submit"]');
    expect(await statusOf(page, "key-check-status")).toBe("Checked: registered, trust basic");
    await screenshots(page, "keys-check");
    // A key that is no key DID: the service's code, as a failure.
    await page.fill("#key-check-key", "did:web:keys-console.test");
    await page.fill("#key-check-at", "");
    await page.click('#key-check-form button[type="submit"]');
    expect(await statusOf(page, "key-check-status")).toStartWith("INVALID_DID: keyDid must be a did:pkh");
    expect(await page.locator("#key-check-status").getAttribute("class")).toContain("error");
    expect(problems).toEqual([]);
    await page.context().close();
  }, 120_000);
});
