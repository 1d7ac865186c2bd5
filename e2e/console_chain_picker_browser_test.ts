/**
 * The console's chain picker (decisions §30, issue 48 item 6) in a real headless Chromium against the real service on
 * the devnet, with the real DNS server: the picker is filled from `/v1/trust-anchors`, and the chosen chain is sent as
 * `chain` on the public reads the console makes (attestations, a domain's controllers, an artifact, a key's status).
 *
 * The first test reads a service of one chain, whose anchors answer lists that one chain. The second reads a second
 * service over both chains of a `DEVNET_CHAINS=2`-style devnet (a CHAINS_FILE naming them), whose answer the browser
 * gives a name and a proof chain more (the one thing not real here), and follows the requests the page then makes.
 * Screenshots at 1280 and 360 px go to e2e/screenshots/.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { type Stack, startStack } from "./harness.ts";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const HAVE_CHROMIUM = existsSync(CHROMIUM);
const IN_CI = process.env.CI === "true" || process.env.CI === "1";
if (!HAVE_CHROMIUM && IN_CI) throw new Error(`CI=true but Chromium is not installed at ${CHROMIUM} (apt-get install chromium)`);
const describeBrowser = HAVE_CHROMIUM ? describe : describe.skip;
const SCREENSHOT_DIR = join(import.meta.dir, "screenshots");
const WIDTHS = [1280, 360] as const;
const KEY = "did:pkh:eip155:31337:0x00000000000000000000000000000000000000aa";
const ARTIFACT = `did:artifact:sha256:${"ab".repeat(32)}`;

let dns: DnsServer;
let stack: Stack;
let browser: Browser;
/** The service the page is opened on: the one-chain service, then the one serving both chains. */
let baseUrl: string;
let twoChainsUrl: string;

beforeAll(async () => {
  if (!HAVE_CHROMIUM) return;
  dns = await startDnsServer();
  dns.setTxt("_controllers.chains-console.test", [[`v=1;controller=${KEY}`]]);
  stack = await startStack({ devnet: { chains: 2 }, env: { DNS_SERVERS: dns.address, ALLOW_PRIVATE_NETWORK: "true", DISCOVERY_CACHE_SECONDS: "0" } });
  baseUrl = stack.baseUrl;
  // Decisions §30: a second service on the same database serving both chains of the devnet.
  const chainsFile = join(stack.dir, "chains.json");
  writeFileSync(chainsFile, JSON.stringify(stack.devnet.chains.map((c) => ({ caip2: c.caip2, rpcUrl: c.rpcUrl, role: "attestations" }))));
  // Chain 31338 is not a devnet id to the raw-key rule (decisions §27): its raw keys need ALLOW_RAW_KEYS.
  twoChainsUrl = (await stack.restartService({ CHAINS_FILE: chainsFile, RPC_URL: "", ALLOW_RAW_KEYS: "true" })).url;
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
  await dns?.stop();
});

/** The page, the problems it reported, and the query of each public read it sent (path → `chain` or null). */
async function open(options: { servedChains?: unknown[] } = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const problems: string[] = [];
  const reads: { path: string; chain: string | null }[] = [];
  page.on("pageerror", (error) => problems.push(`pageerror: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error" && !/Failed to load resource/.test(message.text())) problems.push(`console: ${message.text()}`);
  });
  page.on("request", (request) => {
    const url = new URL(request.url());
    if (url.origin !== baseUrl) problems.push(`foreign request: ${request.url()}`);
    else if (url.pathname.startsWith("/v1/") && url.pathname !== "/v1/trust-anchors") reads.push({ path: url.pathname, chain: url.searchParams.get("chain") });
  });
  if (options.servedChains !== undefined) {
    const servedChains = options.servedChains;
    await page.route("**/v1/trust-anchors", async (route) => {
      const real = await route.fetch();
      await route.fulfill({ response: real, json: { ...(await real.json()), servedChains } });
    });
  }
  await page.goto(`${baseUrl}/#attestations`);
  await page.waitForSelector("html[data-ready=true]");
  await page.waitForSelector("html[data-chains]");
  return { page, problems, reads };
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

/** Makes each public read of the console once, waiting for each request to leave. */
async function readEverything(page: Page): Promise<void> {
  const sent = (path: string) => page.waitForRequest((r) => new URL(r.url()).pathname === path);
  await page.goto(`${baseUrl}/#attestations`);
  await page.fill("#attestations-subject", "did:web:chains-console.test");
  await Promise.all([sent("/v1/attestations"), page.click('#attestations-form button[type="submit"]')]);
  expect(await statusOf(page, "attestations-status")).toBe("0 shown");
  await page.goto(`${baseUrl}/#domain`);
  await page.fill("#domain-input", "chains-console.test");
  await Promise.all([sent("/v1/controller-endpoint-confirm"), page.click('#domain-form button[type="submit"]')]);
  await page.goto(`${baseUrl}/#artifact`);
  await page.fill("#artifact-input", ARTIFACT);
  await Promise.all([sent("/v1/artifact-trust"), page.click('#artifact-form button[type="submit"]')]);
  await page.goto(`${baseUrl}/#keys`);
  await page.fill("#key-check-subject", "chains-console.test");
  await page.fill("#key-check-key", KEY);
  await Promise.all([sent("/v1/key-status"), page.click('#key-check-form button[type="submit"]')]);
  await statusOf(page, "key-check-status");
}

describeBrowser("the console's chain picker in a browser (decisions §30)", () => {
  test("one chain served: the page's one chain, the picker disabled, each read naming that chain", async () => {
    const { page, problems, reads } = await open();
    const picker = page.locator("#chain-picker");
    expect(await picker.locator("option").allInnerTexts()).toEqual(["ATS Devnet (id 31337)"]);
    expect(await picker.isDisabled()).toBe(true);
    await readEverything(page);
    expect(reads.map((r) => r.path)).toEqual(["/v1/attestations", "/v1/controller-endpoint-confirm", "/v1/artifact-trust", "/v1/key-status"]);
    expect(reads.map((r) => r.chain)).toEqual(["eip155:31337", "eip155:31337", "eip155:31337", "eip155:31337"]);
    await page.goto(`${baseUrl}/#attestations`);
    await screenshots(page, "chain-picker-one");
    expect(problems).toEqual([]);
  }, 120_000);

  test("an answer listing two chains: the picker offers both, the default first; every read sends the chosen chain", async () => {
    baseUrl = twoChainsUrl;
    const { page, problems, reads } = await open({ servedChains: [{ caip2: "eip155:31337", role: "attestations", default: true }, { caip2: "eip155:31338", role: "attestations", name: "ATS Devnet 2" }, { caip2: "eip155:31339", role: "proofs" }] });
    const picker = page.locator("#chain-picker");
    expect(await picker.locator("option").allInnerTexts()).toEqual(["ATS Devnet (id 31337), default", "ATS Devnet 2 (id 31338)"]);
    expect(await picker.inputValue()).toBe("eip155:31337");
    expect(await picker.isDisabled()).toBe(false);

    // The default chain, named: the service is told which chain the person reads.
    await readEverything(page);
    expect(reads.map((r) => r.chain)).toEqual(["eip155:31337", "eip155:31337", "eip155:31337", "eip155:31337"]);

    // Another chain: the attestation list starts again (a cursor is bound to its chain), and every read names it.
    await page.goto(`${baseUrl}/#attestations`);
    await page.fill("#attestations-subject", "did:web:chains-console.test");
    await page.click('#attestations-form button[type="submit"]');
    await statusOf(page, "attestations-status");
    await picker.selectOption("eip155:31338");
    expect(await page.locator("#attestations-result").innerText()).toBe("");
    expect(await page.locator("#attestations-status").innerText()).toBe("");
    reads.length = 0;
    await readEverything(page);
    expect(reads.map((r) => `${r.path} ${r.chain}`)).toEqual([
      "/v1/attestations eip155:31338",
      "/v1/controller-endpoint-confirm eip155:31338",
      "/v1/artifact-trust eip155:31338",
      "/v1/key-status eip155:31338",
    ]);
    // The choice holds across the sections (one page, the tabs are anchors).
    expect(await picker.inputValue()).toBe("eip155:31338");
    await page.goto(`${baseUrl}/#attestations`);
    await screenshots(page, "chain-picker-two");
    expect(problems).toEqual([]);
  }, 120_000);
});
