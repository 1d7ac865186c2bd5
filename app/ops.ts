/**
 * Operator command: `bun run ops accounts list`, `bun run ops accounts set-plan <id|address> <free|paid>`,
 * `bun run ops index status`, `bun run ops index rebuild [--from BLOCK]`, `bun run ops payments list [--state STATE]` and
 * `bun run ops oauth rotate-key`, `bun run ops oauth signer-keys` and `bun run ops oauth revoke-signer-key <kid>`.
 * Reads the database from the same environment as the service (DATABASE_URL, else DATABASE_PATH or DATA_DIR).
 * Prints JSON, one account per line for `list`.
 */
import { createJoseAccessTokenKeys, KEY_RELOAD_MS, RETIRED_KEY_GRACE_MS } from "../adapters/jose/mod.ts";
import { systemClock } from "../adapters/system/mod.ts";
import { openStorage } from "./foundation.ts";
import { closeSigners, distinctSigners, openServiceSigners, type ServiceSigners } from "./signers.ts";
import { SignerStartError } from "../adapters/signers/mod.ts";
import { loadSecp256k1, nobleSecp256k1, openKeccak256 } from "../adapters/crypto/mod.ts";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createPublicClient, http } from "viem";
import { type Config, ConfigError, defaultChain, readConfig } from "./config.ts";
import { usesDevnet } from "./config/chains.ts";
import type { Storage } from "../ports/storage.ts";
import type { TrustAnchors } from "../ports/trust_anchors.ts";
import { isPlan, PLANS, quotaYear } from "../domain/accounts/mod.ts";
import { isDoubted, isFresh } from "../domain/index/mod.ts";

const USAGE = `usage: bun run ops accounts list
       bun run ops accounts set-plan <account id | wallet address> <${PLANS.join("|")}>
       bun run ops index status
       bun run ops index rebuild [--from BLOCK]
       bun run ops payments list [--state reserved|worked|settled|settle_failed|work_unknown]
       bun run ops oauth rotate-key
       bun run ops oauth signer-keys
       bun run ops oauth revoke-signer-key <kid>
       bun run ops signers
       (in the image: ats ops …)`;

/** Runs one operator command; returns the exit code. */
export async function runOps(args: readonly string[], env: Readonly<Record<string, string | undefined>>, out: (line: string) => void): Promise<number> {
  const [group, command, ...rest] = args;
  if (group === "signers" && command === undefined) return await signersCommand(env, out);
  const known = group === "accounts"
    ? command === "list" || command === "set-plan"
    : group === "payments" ? command === "list"
    : group === "oauth" ? ((command === "rotate-key" || command === "signer-keys") && rest.length === 0) || (command === "revoke-signer-key" && rest.length === 1)
    : group === "index" && (command === "status" || command === "rebuild");
  if (!known) {
    out(USAGE);
    return 2;
  }
  let config;
  try {
    config = readConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) {
      out(`ats ops: ${error.message}`);
      return 2;
    }
    throw error;
  }
  const storage = await openStorage(config);
  try {
    if (group === "index") return await indexCommand(command!, rest, config, storage, out);
    if (group === "payments") return await paymentsCommand(rest, storage, out);
    if (group === "oauth" && command === "signer-keys") return await listOAuthKeys(storage, out);
    if (group === "oauth" && command === "revoke-signer-key") return await revokeOAuthKey(rest[0]!, config, storage, out);
    if (group === "oauth") return await rotateOAuthKey(config, storage, out);
    const { accounts, ledger } = storage;
    const nowMs = systemClock.nowMs();
    const year = quotaYear(nowMs);
    const limitOf = (plan: "free" | "paid") => plan === "free" ? config.accounts.freePlanAnnualWrites : config.accounts.paidPlanAnnualWrites;
    if (command === "list") {
      for (const account of await accounts.listAccounts()) {
        const usage = await ledger.usage(account.id, year, { nowMs });
        out(JSON.stringify({
          id: account.id,
          address: account.address,
          plan: account.plan,
          createdAt: new Date(account.createdAtMs).toISOString(),
          year,
          writesUsed: usage.used,
          writesReserved: usage.reserved,
          writeLimit: limitOf(account.plan),
        }));
      }
      return 0;
    }
    const [who, plan] = rest;
    if (who === undefined || plan === undefined || !isPlan(plan)) {
      out(USAGE);
      return 2;
    }
    const updated = await accounts.setPlan(who, plan, systemClock.nowMs());
    if (updated === undefined) {
      out(`ats ops: no account ${who}`);
      return 1;
    }
    out(JSON.stringify({ id: updated.id, address: updated.address, plan: updated.plan, writeLimit: limitOf(updated.plan) }));
    return 0;
  } finally {
    await storage.close();
  }
}

/**
 * `oauth rotate-key` (decisions §19): a new token-signing key, the newest from now on; every instance signs its next
 * access token with it. The keys it replaces stay in the JWKS, and verifying, until two hours after this one was made
 * (past the one-hour life of what they signed), so nobody is logged out; the service's upkeep drops them then.
 */
async function rotateOAuthKey(config: Config, storage: Storage, out: (line: string) => void): Promise<number> {
  const keys = createJoseAccessTokenKeys({ store: storage.oauth, clock: systemClock, rotateAfterMs: config.oauth.keyRotationDays * 86_400_000 });
  const previous = (await storage.oauth.signingKeys()).map((k) => k.kid);
  const kid = await keys.rotate();
  out(JSON.stringify({
    kid,
    previousKids: previous,
    previousKeysPublishedUntil: previous.length === 0 ? null : new Date(systemClock.nowMs() + RETIRED_KEY_GRACE_MS).toISOString(),
  }));
  return 0;
}

const iso = (ms: number | null | undefined) => (ms === null || ms === undefined ? null : new Date(ms).toISOString());

/**
 * `oauth signer-keys`: every access-token key the database holds, one JSON line each: the instances' `OAUTH_SIGNER`
 * keys (`kind: "signer"`, most recently first recorded first: `firstSeen`, and `lastSeen`, an instance's last record
 * of it), then the stored keys (`kind: "stored"`, `firstSeen` when made, `retiredAt` once a signer took over), then
 * revoked kids no table holds (`kind: "unrecorded"`); each with `revoked` and `revokedAt`.
 */
async function listOAuthKeys(storage: Storage, out: (line: string) => void): Promise<number> {
  const [signers, stored, revoked] = await Promise.all([storage.oauth.signerKeys(), storage.oauth.signingKeys(), storage.oauth.revokedKeys()]);
  const listed = new Set<string>();
  for (const k of [...signers].sort((a, b) => b.firstSeenAtMs - a.firstSeenAtMs || (a.kid < b.kid ? -1 : 1))) {
    listed.add(k.kid);
    out(JSON.stringify({ kid: k.kid, kind: "signer", firstSeen: iso(k.firstSeenAtMs), lastSeen: iso(k.seenAtMs), revoked: k.revokedAtMs !== undefined, revokedAt: iso(k.revokedAtMs) }));
  }
  for (const k of stored) {
    listed.add(k.kid);
    out(JSON.stringify({ kid: k.kid, kind: "stored", firstSeen: iso(k.createdAtMs), lastSeen: null, retiredAt: iso(k.retiredAtMs), revoked: k.revokedAtMs !== undefined, revokedAt: iso(k.revokedAtMs) }));
  }
  for (const r of revoked) {
    if (!listed.has(r.kid)) out(JSON.stringify({ kid: r.kid, kind: "unrecorded", firstSeen: null, lastSeen: null, revoked: true, revokedAt: iso(r.revokedAtMs) }));
  }
  return 0;
}

/** An RFC 7638 thumbprint (SHA-256, base64url): what every access-token key's `kid` is. */
const KID = /^[A-Za-z0-9_-]{43}$/;

/**
 * `oauth revoke-signer-key <kid>`: the key (an instance's `OAUTH_SIGNER` key, or a stored key) is revoked for good.
 * Every instance refuses its tokens and leaves it out of the JWKS at its next read of the keys (within a minute:
 * `refusedBy`); an instance still signing with it signs nothing more and shows `checks.oauth` false on `/readyz` (not counted in `ready`),
 * so restart those onto a new key first (`lastSeen`: an instance's last record of it; instances record every 10
 * minutes). A kid no table holds may be revoked ahead (a leaked key whose row was dropped: an instance started with it
 * later stays refused). The stored key that signed is replaced at once by a new one (`newKid`).
 */
async function revokeOAuthKey(kid: string, config: Config, storage: Storage, out: (line: string) => void): Promise<number> {
  if (!KID.test(kid)) {
    out("ats ops: not a key id (an access-token key's kid is its RFC 7638 thumbprint: 43 base64url characters; see `oauth signer-keys`)");
    return 2;
  }
  const now = systemClock.nowMs();
  const first = await storage.oauth.revokeKey(kid, now);
  const [signers, stored, revoked] = await Promise.all([storage.oauth.signerKeys(), storage.oauth.signingKeys(), storage.oauth.revokedKeys()]);
  const signer = signers.find((k) => k.kid === kid);
  const key = stored.find((k) => k.kid === kid);
  let newKid: string | undefined;
  const mayStillSign = (k: (typeof stored)[number]) => k.retiredAtMs === null || k.retiredAtMs === undefined;
  // The newest stored key that may sign revoked: a new one signs the next tokens (not an older, replaced one).
  if (key !== undefined && mayStillSign(key) && stored.find((k) => mayStillSign(k) && (k.revokedAtMs === undefined || k.kid === kid)) === key) {
    newKid = await createJoseAccessTokenKeys({ store: storage.oauth, clock: systemClock, rotateAfterMs: config.oauth.keyRotationDays * 86_400_000 }).rotate();
  }
  out(JSON.stringify({
    kid,
    kind: signer !== undefined ? "signer" : key !== undefined ? "stored" : "unrecorded",
    revoked: true,
    revokedAt: iso(revoked.find((r) => r.kid === kid)?.revokedAtMs ?? now),
    alreadyRevoked: !first,
    lastSeen: iso(signer?.seenAtMs),
    refusedBy: iso(now + KEY_RELOAD_MS),
    ...(newKid === undefined ? {} : { newKid }),
  }));
  return 0;
}

const PAYMENT_STATES = ["reserved", "worked", "settled", "settle_failed", "work_unknown"] as const;

/**
 * `payments list`: every x402 payment the service took (decisions §13), newest first, one JSON line each; a
 * `settle_failed` payment's work stands unpaid (`failureReason` says why), a `work_unknown` one was not settled.
 */
async function paymentsCommand(rest: readonly string[], storage: Storage, out: (line: string) => void): Promise<number> {
  let state: (typeof PAYMENT_STATES)[number] | undefined;
  if (rest.length > 0) {
    const wanted = rest[1] as (typeof PAYMENT_STATES)[number];
    if (rest[0] !== "--state" || rest.length !== 2 || !PAYMENT_STATES.includes(wanted)) {
      out(USAGE);
      return 2;
    }
    state = wanted;
  }
  for (const p of await storage.payments.list({ state })) {
    out(JSON.stringify({
      key: p.key,
      purpose: p.purpose,
      state: p.state,
      payer: p.payer,
      payTo: p.payTo,
      amount: p.amount,
      asset: p.asset,
      network: p.network,
      accountId: p.accountId,
      workRef: p.workRef,
      settlementTx: p.settlementTx,
      failureReason: p.failureReason,
      periodStart: iso(p.periodStartMs),
      periodEnd: iso(p.periodEndMs),
      createdAt: iso(p.createdAtMs),
      updatedAt: iso(p.updatedAtMs),
    }));
  }
  return 0;
}

/** The EAS contract the index follows: the trust anchors' chain (the one RPC_URL answers for, when it answers). */
async function indexScope(config: Config): Promise<{ chainId: number; easAddress: string } | string> {
  const path = config.chains.trustAnchorsPath ?? join(config.storage.dataDir, "devnet", "trust-anchors.json");
  let anchors: TrustAnchors;
  try {
    anchors = JSON.parse(readFileSync(path, "utf8")) as TrustAnchors;
  } catch {
    return `cannot read the trust anchors at ${path}`;
  }
  const chains = Object.entries(anchors.chains ?? {});
  let chainId: number | undefined = chains.length === 1 ? Number(chains[0]![0].split(":")[1]) : undefined;
  if (defaultChain(config.chains).rpcUrl !== undefined) {
    try {
      chainId = await createPublicClient({ transport: http(defaultChain(config.chains).rpcUrl, { retryCount: 1 }) }).getChainId();
    } catch {
      // Not reachable: the anchors' only chain, if there is one.
    }
  }
  const chain = chainId === undefined ? undefined : anchors.chains[`eip155:${chainId}`];
  if (chainId === undefined || chain === undefined) return "cannot tell which chain's index to use (set RPC_URL)";
  return { chainId, easAddress: chain.easContract };
}

/** `index status` prints the checkpoint (and the head and lag when RPC_URL answers); `index rebuild` rewinds it. */
async function indexCommand(command: string, rest: readonly string[], config: Config, storage: Storage, out: (line: string) => void): Promise<number> {
  const scope = await indexScope(config);
  if (typeof scope === "string") {
    out(`ats ops: ${scope}`);
    return 1;
  }
  const store = await storage.indexStore(scope);
  const checkpoint = await store.checkpoint();
  if (command === "status") {
    let head: bigint | undefined;
    if (defaultChain(config.chains).rpcUrl !== undefined) {
      try {
        head = await createPublicClient({ transport: http(defaultChain(config.chains).rpcUrl, { retryCount: 1 }) }).getBlockNumber();
      } catch {
        // Reported as unknown.
      }
    }
    const [indexHead, counts] = await Promise.all([store.head(), store.counts()]);
    const checkedAtMs = indexHead?.checkedAtMs ?? null;
    out(JSON.stringify({
      chainId: scope.chainId,
      easContract: scope.easAddress,
      indexedBlock: checkpoint === undefined ? null : Number(checkpoint.blockNumber),
      blockHash: checkpoint?.blockHash ?? null,
      head: head === undefined ? null : Number(head),
      lagBlocks: head === undefined ? null : Number(head - (checkpoint?.blockNumber ?? (defaultChain(config.chains).startBlock ?? 0n) - 1n)),
      // The follower's last completed poll (decisions §21): public reads are 503 INDEX_STALE once it is older than the
      // stall time, or once it is doubted (the follower's polls found the chain's head below the index for longer than
      // INDEX_BEHIND_GRACE_SECONDS since).
      checkedAt: checkedAtMs === null ? null : new Date(checkedAtMs).toISOString(),
      stale: !isFresh(indexHead, { nowMs: Date.now(), stallSeconds: config.index.stallSeconds }),
      doubted: isDoubted(indexHead),
      attestations: counts.attestations,
      tailAttestations: counts.tail,
    }));
    return 0;
  }
  let from: bigint | undefined;
  if (rest.length > 0) {
    if (rest[0] !== "--from" || rest.length !== 2 || !/^[0-9]+$/.test(rest[1]!)) {
      out(USAGE);
      return 2;
    }
    from = BigInt(rest[1]!);
  }
  // Back to the newest stored checkpoint before `from` (no chain read needed); none: the whole index.
  const to = from === undefined ? undefined : (await store.history(Number.MAX_SAFE_INTEGER)).find((c) => c.blockNumber < from!);
  // The webhook boundary stays (decisions §22): the rebuilt history is not told to webhook endpoints again.
  await store.rewind(to, { keepWebhookMark: true });
  out(JSON.stringify({
    rebuildFrom: to === undefined ? "start" : Number(to.blockNumber + 1n),
    previousIndexedBlock: checkpoint === undefined ? null : Number(checkpoint.blockNumber),
  }));
  return 0;
}

if (import.meta.main) {
  process.exit(await runOps(process.argv.slice(2), process.env, (line) => console.log(line)));
}

/**
 * `signers` (decisions §27): each role's backend and address or JWK thumbprint, and a test signature with each (a
 * typed-data ping, or a JWS signing input); 1 when one cannot be opened or does not sign.
 */
async function signersCommand(env: Readonly<Record<string, string | undefined>>, out: (line: string) => void): Promise<number> {
  let signers: ServiceSigners;
  try {
    const config = readConfig(env);
    const quiet = { debug() {}, info() {}, warn() {}, error() {} };
    const keccak256 = await openKeccak256();
    const secp = loadSecp256k1(config.signers.secp256k1Library, keccak256);
    signers = await openServiceSigners(config, { log: quiet, metrics: { increment() {}, observe() {} }, secp256k1: secp.ok ? secp.value : nobleSecp256k1, keccak256 });
  } catch (error) {
    if (error instanceof ConfigError || error instanceof SignerStartError) {
      out(`ats ops: ${error.message}`);
      return 1;
    }
    throw error;
  }
  const found = distinctSigners(signers);
  if (found.length === 0) {
    // Nothing configured: the embedded devnet gives its own keys at the service's start, which this command does not
    // run (it printed nothing and exited 0). Against a real chain that is the start's own refusal.
    const devnet = usesDevnet(env);
    out(devnet ? "ats ops: no signer is configured; the embedded devnet gives its own keys when the service starts" : "ats ops: no signer is configured (DELEGATE_SIGNER, WITNESS_SIGNER, X402_SIGNER, OAUTH_SIGNER)");
    return devnet ? 0 : 1;
  }
  let failed = false;
  try {
    for (const { roles, signer } of found) {
      const key = "address" in signer ? signer.address : signer.thumbprint;
      const signed = "signTypedData" in signer
        ? await signer.signTypedData({ domain: { name: "ats ops" }, types: { Ping: [{ name: "at", type: "uint256" }] }, primaryType: "Ping", message: { at: BigInt(Date.now()) } }, { purpose: "test" })
        : await signer.sign(new TextEncoder().encode(`ats-ops.${Date.now()}`), { purpose: "test" });
      if (!signed.ok) failed = true;
      out(JSON.stringify({ roles, backend: signer.backend, key, raw: signer.raw, testSignature: signed.ok ? "ok" : signed.reason }));
    }
  } finally {
    await closeSigners(signers);
  }
  return failed ? 1 : 0;
}
