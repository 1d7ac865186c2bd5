/**
 * The console (issue 19) in a real headless Chromium (Debian's `chromium`, driven by playwright-core) against the
 * real service on the devnet, with the real DNS server and an HTTPS did.json server: the domain check shows what
 * was found and what is missing, the artifact check shows a seeded assessment and the loader's verdict, and a test
 * EIP-1193 wallet (announced through EIP-6963, signing in Node with an Anvil dev key) signs in, adds and proves a
 * subject, requests a witness and writes a review, both read back from the chain. Screenshots of every screen at
 * 1280 and 360 px go to e2e/screenshots/.
 *
 * Without Chromium the tests are skipped locally and fail in CI (CI=true), like the PostgreSQL tests.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { createPublicClient, createWalletClient, type Hex, http, sha256 } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { ANVIL_DEV_KEYS } from "../adapters/devnet/mod.ts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { artifactDidFromDigest, didToAddress } from "../domain/did/mod.ts";
import { decodeSchemaData, encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import type { Service } from "../app/service.ts";
import { writeAnchorsWithIssuers } from "./support/devnet_fixtures.ts";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { easWriter } from "./support/eas_writer.ts";
import { type HttpsServer, startHttpsServer } from "./support/https_server.ts";
import { getTestCa, issueLeaf } from "./support/test_ca.ts";
import { freePort, type Stack, startStack } from "./harness.ts";
import { injectWallet, walletAnswers } from "./support/browser_wallet.ts";
import { verifyReview } from "../client/reviews.ts";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const HAVE_CHROMIUM = existsSync(CHROMIUM);
const IN_CI = process.env.CI === "true" || process.env.CI === "1";
if (!HAVE_CHROMIUM && IN_CI) throw new Error(`CI=true but Chromium is not installed at ${CHROMIUM} (apt-get install chromium)`);
const describeBrowser = HAVE_CHROMIUM ? describe : describe.skip;

export const SCREENSHOT_DIR = join(import.meta.dir, "screenshots");
const WIDTHS = [1280, 360] as const;

const PLUGIN_BYTES = new TextEncoder().encode("console e2e plugin, version 1\n");
const ARTIFACT = artifactDidFromDigest(sha256(PLUGIN_BYTES));
const UNKNOWN_ARTIFACT = artifactDidFromDigest(sha256(new TextEncoder().encode("nobody attested this")));

let dns: DnsServer;
let https: HttpsServer;
let stack: Stack;
let service: Service;
let browser: Browser;
let user: ReturnType<typeof privateKeyToAccount>;
let userDid: string;
let webDid: string;
/** Every EIP-1193 call the test wallet answered, in order. */
const walletCalls: string[] = [];

const chain = () => createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl) });

async function readAttestation(uid: Hex, schemaName: string) {
  const attestation = await chain().readContract({ address: service.easAddress, abi: EAS_ABI, functionName: "getAttestation", args: [uid] });
  const decoded = decodeSchemaData(findSchemaByName(schemaName)!.schema, attestation.data);
  return { attestation, data: decoded.ok ? decoded.value : undefined };
}

beforeAll(async () => {
  if (!HAVE_CHROMIUM) return;
  // An Anvil dev key the devnet funds but no other role here uses; it needs no gas (the relay and the witness pay).
  user = privateKeyToAccount(ANVIL_DEV_KEYS[8]!);
  userDid = `did:pkh:eip155:31337:${user.address.toLowerCase()}`;
  dns = await startDnsServer();
  const ca = await getTestCa();
  const leaf = await issueLeaf(["web.test"]);
  https = await startHttpsServer({
    ...leaf,
    routes: (request) =>
      (request.headers.get("host") ?? "").startsWith("web.test")
        ? Response.json({ id: webDid, verificationMethod: [{ id: `${webDid}#key-1`, type: "EcdsaSecp256k1RecoveryMethod2020", controller: webDid, blockchainAccountId: `eip155:31337:${user.address}` }] })
        : new Response("not here", { status: 404 }),
  });
  webDid = `did:web:web.test%3A${https.port}`;
  dns.setA("web.test", ["127.0.0.1"]);
  // shop.test: the wallet in _controllers plus a record that names no signing key; nothing at _omatrust; no did.json host.
  dns.setTxt("_controllers.shop.test", [[`v=1;controller=${userDid}`], ["v=1;controller=did:web:nope.test"]]);
  dns.setServfail("_controllers.broken.test");
  stack = await startStack({
    env: {
      DNS_SERVERS: dns.address,
      ALLOW_PRIVATE_NETWORK: "true",
      FREE_PLAN_SCHEMAS: "*",
      FREE_PLAN_ANNUAL_WRITES: "10",
      SIWE_CHALLENGE_RATE_PER_MINUTE: "1000",
    },
    didJsonCa: ca.cert,
  });
  // The auditor is an approved security-assessment issuer; the page is served on a fixed port so that its origin is
  // the service's public origin (SIWE domain and the private routes' origin check, both by default).
  const auditor = stack.devnet.keys.users[1] as Hex;
  const anchors = writeAnchorsWithIssuers(stack.devnet.trustAnchorsPath, join(stack.dir, "console-anchors.json"), [
    { key: auditor, label: "Example Audits", schemas: ["security-assessment"] },
  ]);
  service = await stack.restartService({ TRUST_ANCHORS_PATH: anchors, PORT: String(freePort()) });
  const writer = easWriter({ rpcUrl: stack.devnet.rpcUrl, easAddress: stack.devnet.easAddress });
  const now = (await writer.client.getBlock({ blockTag: "latest" })).timestamp;
  const schema = findSchemaByName("security-assessment")!;
  await writer.attest(auditor, stack.devnet.schemaUids["security-assessment"] as Hex, {
    recipient: (didToAddress(ARTIFACT) as { value: Hex }).value,
    revocable: schema.revocable,
    data: (encodeSchemaData(schema.schema, {
      subject: ARTIFACT,
      organization: "Example Audits",
      version: "1.0.0",
      versionHW: "",
      payload: '{"findings":0}',
      payloadVersion: "1",
      payloadSpecURI: "https://example.test/spec",
      payloadSpecDigest: "",
      issuedAt: now,
      effectiveAt: 0n,
      expiresAt: 0n,
    }) as { value: Hex }).value,
  });
  // Written straight to the chain, not through the service: its follower polls before the reads (decisions §21).
  await stack.sync();
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
  await https?.stop();
  await dns?.stop();
});

type Opened = { page: Page; problems: string[] };

async function open(hash: string): Promise<Opened> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(`pageerror: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error" && !/Failed to load resource/.test(message.text())) problems.push(`console: ${message.text()}`);
    if (/Content Security Policy/i.test(message.text())) problems.push(`csp: ${message.text()}`);
  });
  // Requests to anything but the service would break "no other origin at run time".
  page.on("request", (request) => {
    if (!request.url().startsWith(service.url) && !request.url().startsWith("data:")) problems.push(`foreign request: ${request.url()}`);
  });
  await injectWallet(page, walletAnswers(user, { onCall: (method) => walletCalls.push(method) }));
  await page.goto(`${service.url}/${hash === "" ? "" : `#${hash}`}`);
  await page.waitForSelector("html[data-ready=true]");
  return { page, problems };
}

async function screenshots(page: Page, name: string): Promise<void> {
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: 900 });
    // Nothing may stick out sideways at 360 px.
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect({ name, width, overflow }).toEqual({ name, width, overflow: 0 });
    await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

const text = (page: Page, selector: string) => page.locator(selector).innerText();
const statusOf = async (page: Page, id: string, kinds = /\b(ok|warn|error)\b/) => {
  await page.waitForFunction(([sel, re]) => new RegExp(re).test(document.getElementById(sel)!.className), [id, kinds.source] as const, { timeout: 30_000 });
  return await text(page, `#${id}`);
};

describeBrowser("the console in a browser", () => {
  test("the page is served under its policy and talks to no other origin; every control is reachable by keyboard", async () => {
    const res = await fetch(`${service.url}/`);
    expect(res.headers.get("content-security-policy")).toContain("script-src 'self'");
    // From the top of the page (a fragment would move the starting point of sequential focus to its target).
    const { page, problems } = await open("");
    expect(await page.title()).toBe("ATS console");
    await screenshots(page, "domain-empty");
    // Tab from the top: the skip link, the six sections, then the domain form's fields in order.
    const focused: string[] = [];
    for (let i = 0; i < 9; i++) {
      await page.keyboard.press("Tab");
      focused.push(await page.evaluate(() => {
        const el = document.activeElement as HTMLElement;
        return el.id || el.getAttribute("href") || el.tagName;
      }));
    }
    // The Keys tab (issue 24) comes after Account, then Webhooks (issue 35).
    expect(focused).toEqual(["#main", "#domain", "#artifact", "#attestations", "#account", "#keys", "#webhooks", "domain-input", "domain-wallet"]);
    expect(problems).toEqual([]);
    await page.context().close();
  });

  test("check a domain: each name queried, the records found, what is ignored and missing, the record to publish; failures are failures", async () => {
    const { page, problems } = await open("domain");
    // A pasted address of the site names its domain (it was refused as "did:web must name a domain").
    await page.fill("#domain-input", " https://shop.test/about?x=1 ");
    await page.fill("#domain-wallet", user.address);
    await page.press("#domain-input", "Enter");
    expect(await statusOf(page, "domain-status")).toBe("Checked shop.test");
    const controllers = page.locator('#domain-evidence article[data-kind="dns-txt"]').first();
    expect(await controllers.getAttribute("data-status")).toBe("found");
    const controllersText = await controllers.innerText();
    expect(controllersText).toContain("_controllers.shop.test");
    expect(controllersText).toContain(`v=1;controller=${userDid}`);
    expect(controllersText).toContain("v=1;controller=did:web:nope.test");
    expect(controllersText).toContain('"did:web:nope.test" is not a did:pkh, did:ethr, did:key, did:jwk or CAIP-10 account id');
    const label = page.locator('#domain-evidence article[data-kind="dns-txt"]').nth(1);
    expect(await label.getAttribute("data-status")).toBe("not-found");
    expect(await label.innerText()).toContain("_omatrust.shop.test");
    expect(await label.innerText()).toContain("No such name (NXDOMAIN)");
    const didJson = page.locator('#domain-evidence article[data-kind="did-json"]');
    expect(await didJson.innerText()).toContain("https://shop.test/.well-known/did.json");
    expect(await didJson.getAttribute("data-status")).toBe("not-found");
    expect(await text(page, "#domain-controllers")).toContain(userDid);
    expect(await text(page, "#domain-missing")).toContain("_omatrust.shop.test publishes no controller.");
    expect(await text(page, "#domain-publish")).toContain("This wallet is already published as a controller.");
    await screenshots(page, "domain-found");

    // A domain that publishes nothing, with a wallet: the exact record to publish, and a copy button.
    const other = "0x00000000000000000000000000000000000000aB";
    await page.fill("#domain-input", "fresh.test");
    await page.fill("#domain-wallet", other);
    await page.click("#domain-form button[type=submit]");
    expect(await statusOf(page, "domain-status")).toBe("Checked fresh.test");
    expect(await page.locator("#domain-evidence article").evaluateAll((cards) => cards.map((c) => c.getAttribute("data-status"))))
      .toEqual(["not-found", "not-found", "not-found"]);
    expect(await text(page, "#domain-missing")).toContain("No source names a controller");
    expect(await text(page, "#publish-name")).toBe("_controllers.fresh.test");
    expect(await text(page, "#publish-value")).toBe(`v=1;controller=did:pkh:eip155:31337:${other.toLowerCase()}`);
    await page.context().grantPermissions(["clipboard-read", "clipboard-write"], { origin: service.url });
    await page.click('button[aria-label="Copy record value"]');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(`v=1;controller=did:pkh:eip155:31337:${other.toLowerCase()}`);
    await screenshots(page, "domain-missing");

    // A name whose DNS server fails is a failed lookup, not "nothing found".
    await page.fill("#domain-input", "broken.test");
    await page.fill("#domain-wallet", "");
    await page.click("#domain-form button[type=submit]");
    expect(await statusOf(page, "domain-status")).toBe("Checked broken.test: 1 lookup failed, see below");
    expect(await page.getAttribute("#domain-status", "class")).toBe("status warn");
    const broken = page.locator('#domain-evidence article[data-kind="dns-txt"]').first();
    expect(await broken.getAttribute("data-status")).toBe("unavailable");
    expect(await broken.innerText()).toContain("Lookup failed");
    expect(await broken.innerText()).toContain("Why: DNS server failure");
    expect(await text(page, "#domain-missing")).toContain("_controllers.broken.test could not be checked (DNS server failure); this is a failure");
    expect(await text(page, "#domain-missing")).not.toContain("No source names a controller");
    await screenshots(page, "domain-failure");

    // The service refusing the input: its code is shown.
    await page.fill("#domain-input", "did:web:");
    await page.click("#domain-form button[type=submit]");
    expect(await statusOf(page, "domain-status")).toStartWith("INVALID_DID: ");
    expect(await text(page, "#domain-error")).toContain("The lookup failed");
    expect(problems).toEqual([]);
    await page.context().close();
  });

  test("check an artifact: a file hashed in the browser, the seeded assessment with its basis, the loader's verdict", async () => {
    const { page, problems } = await open("artifact");
    await page.setInputFiles("#artifact-file", { name: "plugin.zip", mimeType: "application/zip", buffer: Buffer.from(PLUGIN_BYTES) });
    await page.waitForFunction((did) => (document.getElementById("artifact-input") as HTMLInputElement).value === did, ARTIFACT);
    expect(await text(page, "#artifact-status")).toContain(`plugin.zip (${PLUGIN_BYTES.length} bytes) is ${ARTIFACT}`);
    await page.click("#artifact-form button[type=submit]");
    expect(await statusOf(page, "artifact-status")).toBe(`Checked ${ARTIFACT}`);
    expect(await page.getAttribute("#artifact-verdict", "data-warn")).toBe("false");
    expect(await text(page, "#artifact-verdict")).toContain("A plugin loader would not warn.");
    const assessments = page.locator('[data-group="securityAssessments"]');
    expect(await assessments.locator("h3").innerText()).toBe("Security assessments (1)");
    const card = await assessments.locator("article").innerText();
    expect(card).toContain("Example Audits");
    expect(card).toContain("approved-issuer");
    for (const group of ["responsibilityClaims", "certifications", "otherAttestations"]) {
      expect(await page.locator(`[data-group="${group}"] article`).count()).toBe(0);
    }
    const summary = await text(page, "#artifact-summary");
    expect(summary).toMatch(/Candidates read\s+1/);
    expect(summary).toMatch(/Verified\s+1/);
    expect(summary).toMatch(/Excluded\s+0/);
    await screenshots(page, "artifact-assessed");

    // A file dropped on the drop zone is hashed the same way.
    await page.fill("#artifact-input", "");
    await page.evaluate((bytes) => {
      const transfer = new DataTransfer();
      transfer.items.add(new File([new Uint8Array(bytes)], "dropped.zip"));
      document.getElementById("artifact-drop")!.dispatchEvent(new DragEvent("drop", { dataTransfer: transfer, bubbles: true, cancelable: true }));
    }, [...PLUGIN_BYTES]);
    await page.waitForFunction((did) => (document.getElementById("artifact-input") as HTMLInputElement).value === did, ARTIFACT);

    // Nothing qualifying: the loader warns and says why.
    await page.fill("#artifact-input", UNKNOWN_ARTIFACT);
    await page.click("#artifact-form button[type=submit]");
    await statusOf(page, "artifact-status");
    expect(await page.getAttribute("#artifact-verdict", "data-warn")).toBe("true");
    expect(await text(page, "#artifact-verdict")).toContain("No verified responsibility claim");
    await screenshots(page, "artifact-warn");

    // Not a did:artifact: the service's code, and the loader warns because nothing could be loaded.
    await page.fill("#artifact-input", "did:artifact:nope");
    await page.click("#artifact-form button[type=submit]");
    expect(await statusOf(page, "artifact-status")).toStartWith("INVALID_DID: ");
    expect(await text(page, "#artifact-verdict")).toContain("Artifact trust could not be loaded");
    expect(await text(page, "#artifact-verdict")).toContain("Code: INVALID_DID");
    expect(problems).toEqual([]);
    await page.context().close();
  });

  test("a wallet signs in, adds and proves a subject, requests a witness and writes a review, both on chain", async () => {
    const { page, problems } = await open("account");
    await screenshots(page, "account-signed-out");
    await page.click('button[data-wallet="test.ats.wallet"]');
    expect(await statusOf(page, "account-status")).toBe(`Signed in as ${user.address}`);
    expect(walletCalls).toContain("eth_requestAccounts");
    expect(walletCalls).toContain("personal_sign");
    expect(await text(page, "#account-plan")).toBe("free (active)");
    expect(await text(page, "#account-writes")).toBe("0 of 10 used this year");

    // Ownership: proven through the domain's TXT record; a domain that does not name the wallet is refused with its code.
    await page.fill("#subject-did", "shop.test");
    await page.click("#subject-verify");
    expect(await statusOf(page, "subject-status")).toBe("Verified: your wallet owns did:web:shop.test (method dns)");
    await page.fill("#subject-name", "My shop");
    await page.click("#subject-form button[type=submit]");
    expect(await statusOf(page, "subject-status")).toBe("Added did:web:shop.test (proven by dns)");
    expect(await text(page, '#subjects li[data-did="did:web:shop.test"]')).toContain("“My shop” — proven by dns, default");
    await page.fill("#subject-did", webDid);
    await page.click("#subject-form button[type=submit]");
    // The did:web's host part is normalized to lower case, the escaped port's "%3A" included.
    expect(await statusOf(page, "subject-status")).toBe(`Added ${webDid.replace("%3A", "%3a")} (proven by did-document)`);
    await page.fill("#subject-did", "fresh.test");
    await page.click("#subject-form button[type=submit]");
    expect(await statusOf(page, "subject-status")).toStartWith("SUBJECT_OWNERSHIP_VERIFICATION_FAILED: ");

    // A witness of the DNS record, read back from EAS.
    await page.fill("#witness-subject", "shop.test");
    await page.click("#witness-form button[type=submit]");
    const witnessed = await statusOf(page, "witness-status");
    expect(witnessed).toMatch(/^Witness written \(dns-txt\): uid 0x[0-9a-f]{64}, transaction 0x[0-9a-f]{64}, block \d+$/);
    const witness = await readAttestation(/uid (0x[0-9a-f]{64})/.exec(witnessed)![1] as Hex, "controller-witness");
    expect(witness.attestation.attester).toBe(privateKeyToAccount(stack.devnet.keys.witness).address);
    expect(witness.data).toMatchObject({ subject: "did:web:shop.test", controller: userDid, method: "dns-txt" });
    await page.fill("#witness-subject", "fresh.test");
    await page.click("#witness-form button[type=submit]");
    expect(await statusOf(page, "witness-status")).toStartWith("EVIDENCE_NOT_FOUND: ");
    // A witness written while the account summary cannot be read afterwards: written, said as a warning that the page
    // is behind, never as a failure (a person would send it again and spend a second write).
    await page.route("**/api/private/accounts/me", (route) => route.fulfill({ status: 503, contentType: "application/json", body: '{"error":"Unavailable","code":"SHUTTING_DOWN"}' }));
    await page.fill("#witness-subject", "shop.test");
    await page.click("#witness-form button[type=submit]");
    const behind = await statusOf(page, "witness-status");
    expect(behind).toMatch(/^Witness written \(dns-txt\): uid 0x[0-9a-f]{64}, .*\. This page could not be brought up to date: reload it to see the change\.$/);
    expect(await page.locator("#witness-status").getAttribute("class")).toContain("warn");
    await page.unroute("**/api/private/accounts/me");

    // A review signed with eth_signTypedData_v4 and sent through the private relay, read back from EAS, backed by a
    // transaction the wallet sent to an address the service names (its TXT record names this wallet). A hash that is
    // not one is refused before the wallet is asked to sign.
    await page.fill("#review-subject", "shop.test");
    await page.selectOption("#review-rating", "4");
    await page.fill("#review-body", "Fast and friendly <b>not bold</b>");
    await page.fill("#review-tx", "0x1234");
    const signaturesBefore = walletCalls.filter((call) => call === "eth_signTypedData_v4").length;
    await page.click("#review-form button[type=submit]");
    expect(await statusOf(page, "review-status")).toBe("INVALID_INPUT: transaction: txHash must be 32 bytes of hex");
    expect(walletCalls.filter((call) => call === "eth_signTypedData_v4")).toHaveLength(signaturesBefore);
    // The form's transaction is on this service's chain: it cannot back a review of an address on another chain
    // (issue 33, the chain rule), refused unsigned with the reason.
    const onMainnet = `did:pkh:eip155:1:${user.address.toLowerCase()}`;
    await page.fill("#review-subject", onMainnet);
    await page.fill("#review-tx", `0x${"ab".repeat(32)}`);
    await page.click("#review-form button[type=submit]");
    expect(await statusOf(page, "review-status")).toBe(`INVALID_INPUT: proofs: the transaction is on eip155:31337, not on ${onMainnet}'s chain eip155:1`);
    expect(walletCalls.filter((call) => call === "eth_signTypedData_v4")).toHaveLength(signaturesBefore);
    await page.fill("#review-subject", "shop.test");
    const wallet = createWalletClient({ account: user, transport: http(stack.devnet.rpcUrl) });
    const paid = await wallet.sendTransaction({ to: user.address, value: 1n, chain: null });
    expect((await chain().waitForTransactionReceipt({ hash: paid })).status).toBe("success");
    await page.fill("#review-tx", paid.toUpperCase().replace("0X", "0x"));
    await page.click("#review-form button[type=submit]");
    const reviewed = await statusOf(page, "review-status");
    expect(reviewed).toMatch(/^Review written \(with tx-interaction proof 0x[0-9a-f]{64}\): uid 0x[0-9a-f]{64}, transaction 0x[0-9a-f]{64}, block \d+$/);
    expect(walletCalls).toContain("eth_signTypedData_v4");
    const reviewUid = /uid (0x[0-9a-f]{64})/.exec(reviewed)![1] as Hex;
    const review = await readAttestation(reviewUid, "user-review");
    expect(review.attestation.attester).toBe(user.address);
    expect(review.attestation.recipient.toLowerCase()).toBe((didToAddress("did:web:shop.test") as { value: Hex }).value.toLowerCase());
    expect(review.data).toMatchObject({ subject: "did:web:shop.test", reviewBody: "Fast and friendly <b>not bold</b>" });
    expect(Number(review.data?.ratingValue)).toBe(4);
    expect((review.data?.proofs as string[]).map((proof) => JSON.parse(proof))).toEqual([
      { proofType: "tx-interaction", proofPurpose: "commercial-tx", proofObject: { chainId: "eip155:31337", txHash: paid.toLowerCase() } },
    ]);
    // A reader checking the review finds the transaction on chain, from the reviewer.
    const verified = await verifyReview(reviewUid, { baseUrl: service.url, rpc: stack.devnet.rpcUrl, chainId: 31337 });
    expect(verified.proofs).toHaveLength(1);
    expect(verified.proofs[0]).toMatchObject({ proofType: "tx-interaction", valid: true, reasons: [], transaction: { txHash: paid.toLowerCase() } });
    // Two witnesses (the second written while the summary could not be read) and the review.
    expect(await text(page, "#account-writes")).toBe("3 of 10 used this year");
    await screenshots(page, "account-signed-in");

    // After a reload the session is there but no wallet signed in this visit: what needs no signature still works
    // (it answered UNAUTHENTICATED "Sign in with a wallet first").
    await page.reload();
    await page.waitForSelector("html[data-ready=true]");
    await page.waitForFunction(() => document.getElementById("account-status")!.textContent!.includes("Signed in from an earlier visit"));
    await page.fill("#subject-did", "shop.test");
    await page.click("#subject-verify");
    expect(await statusOf(page, "subject-status")).toBe("Verified: your wallet owns did:web:shop.test (method dns)");
    await page.fill("#witness-subject", "shop.test");
    await page.click("#witness-form button[type=submit]");
    expect(await statusOf(page, "witness-status")).toMatch(/^Witness written \(dns-txt\)/);

    // The review in the subject's attestations, shown as text (the markup in it stays text).
    await page.goto(`${service.url}/#attestations`);
    await page.waitForSelector("html[data-ready=true]");
    await page.waitForSelector('#attestations-schema option[value="controller-witness"]', { state: "attached" });
    await page.fill("#attestations-subject", "shop.test");
    await page.selectOption("#attestations-schema", "user-review");
    await page.click("#attestations-form button[type=submit]");
    expect(await statusOf(page, "attestations-status")).toBe("1 shown");
    const listed = await text(page, "#attestations-result");
    expect(listed).toContain("Fast and friendly <b>not bold</b>");
    expect(listed).toContain(user.address);
    expect(await page.locator("#attestations-result b").count()).toBe(0);
    await screenshots(page, "attestations");

    // Everything the user attested, any schema, by attester alone (decisions §24); then every review, by schema alone.
    await page.fill("#attestations-subject", "");
    await page.fill("#attestations-attester", user.address);
    await page.selectOption("#attestations-schema", "");
    await page.click("#attestations-form button[type=submit]");
    const byAttester = await statusOf(page, "attestations-status");
    expect(byAttester).toMatch(/^[1-9][0-9]* shown$/);
    const attesters = await page.locator("#attestations-result article dt:text-is('Attester') + dd").allTextContents();
    expect(attesters.length).toBe(Number.parseInt(byAttester));
    expect(new Set(attesters.map((a) => a.toLowerCase()))).toEqual(new Set([user.address.toLowerCase()]));
    expect(await text(page, "#attestations-result")).toContain("Fast and friendly <b>not bold</b>");
    await screenshots(page, "attestations-by-attester");
    await page.fill("#attestations-attester", "");
    await page.selectOption("#attestations-schema", "user-review");
    await page.click("#attestations-form button[type=submit]");
    expect(await statusOf(page, "attestations-status")).toBe("1 shown");
    expect(await text(page, "#attestations-result")).toContain("Fast and friendly <b>not bold</b>");
    // None of the three: the page says what to give, without asking the service.
    await page.selectOption("#attestations-schema", "");
    await page.click("#attestations-form button[type=submit]");
    expect(await statusOf(page, "attestations-status")).toBe("Give a subject, an attester or a schema");
    expect(problems).toEqual([]);
    await page.context().close();
  }, 120_000);
});

describeBrowser("the console opened at http://localhost:PORT", () => {
  test("signs in and out there too (SIWE_DOMAINS' default names localhost:PORT); another localhost port is still refused", async () => {
    const local = service.url.replace("//127.0.0.1:", "//localhost:");
    expect(local).toStartWith("http://localhost:");
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await injectWallet(page, walletAnswers(user));
    await page.goto(`${local}/#account`);
    await page.waitForSelector("html[data-ready=true]");
    await page.click('button[data-wallet="test.ats.wallet"]');
    expect(await statusOf(page, "account-status")).toBe(`Signed in as ${user.address}`);
    await page.click("#sign-out");
    await page.waitForFunction(() => document.getElementById("account-status")!.textContent === "Signed out");
    await context.close();
    // The CSRF guard is otherwise as it was: a page on another port of localhost is another origin.
    const elsewhere = await fetch(`${service.url}/v1/session/wallet/challenge`, {
      method: "POST",
      headers: { origin: "http://localhost:1", "content-type": "application/json" },
      body: JSON.stringify({ walletDid: userDid, domain: new URL(local).host, uri: `${local}/` }),
    });
    expect([elsewhere.status, ((await elsewhere.json()) as { code: string }).code]).toEqual([403, "ORIGIN_NOT_ALLOWED"]);
  }, 60_000);
});
