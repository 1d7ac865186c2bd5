// Part of bench/reads.ts: the chains (the devnet, one or two attestation chains), the database, the counting proxies,
// the data each read answers with, and the environments the service processes are started with.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestClient, type Hex, http, sha256, stringToBytes } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { type DevnetChain, startDevnet } from "../adapters/devnet/mod.ts";
import { artifactDidFromDigest, didToAddress } from "../domain/did/mod.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { e2eArtifacts } from "../e2e/harness.ts";
import { writeAnchorsWithIssuers } from "../e2e/support/devnet_fixtures.ts";
import { easWriter } from "../e2e/support/eas_writer.ts";
import { startPostgres } from "../e2e/support/postgres.ts";
import type { ServiceProcess } from "../e2e/support/service_process.ts";
import type { Read } from "./_reads_load.ts";
import { onCleanup, startHelper } from "./_reads_run.ts";

/** One attestation chain of the bench, reached by the services through its counting proxy. */
export type BenchChain = { readonly chainId: number; readonly caip2: string; readonly counterPort: number };

/** Everything the measurements need, set once the chains, the database and the data are there. */
export type ReadsBench = {
  readonly seconds: number;
  readonly noAnswerCache: boolean;
  readonly dir: string;
  readonly pgUrl: string;
  /** The default chain first; a second one in the two-chain mode. */
  readonly chains: readonly BenchChain[];
  /** The reads of the default chain, with no `chain` parameter. */
  readonly reads: readonly Read[];
  /** The same reads of the second chain (`chain=<its CAIP-2>`), in the two-chain mode. */
  readonly readsB: readonly Read[] | undefined;
  /** A one-chain instance's environment (`RPC_URL` on the default chain). */
  readonly env: Record<string, string>;
  /** A two-chain instance's environment (`CHAINS_FILE` naming both), in the two-chain mode. */
  readonly twoChainEnv: Record<string, string> | undefined;
  /** The service processes started, in order. */
  readonly instances: ServiceProcess[];
};

/** The chains, the database, the counting proxies and the data each read answers with. */
export async function setUp(options: { seconds: number; noAnswerCache: boolean; twoChains: boolean }): Promise<ReadsBench> {
  const dir = mkdtempSync(join(tmpdir(), "ats-reads-"));
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  const pg = await startPostgres();
  onCleanup(() => pg.stop());
  const devnet = await startDevnet({ dataDir: join(dir, "devnet"), persist: false, artifacts: e2eArtifacts(), chains: options.twoChains ? 2 : 1 });
  onCleanup(() => devnet.stop());
  const used = options.twoChains ? devnet.chains.slice(0, 2) : devnet.chains.slice(0, 1);
  const chains: BenchChain[] = [];
  for (const c of used) chains.push({ chainId: c.chainId, caip2: c.caip2, counterPort: (await startHelper("_rpc_counter.ts", [c.rpcUrl])).port });

  const [auditor] = devnet.keys.users as [Hex];
  const anchorsPath = writeAnchorsWithIssuers(devnet.trustAnchorsPath, join(dir, "bench-reads-anchors.json"), [
    { key: auditor, label: "Bench Audits", schemas: ["security-assessment"] },
  ]);
  const reads = await seed(used[0]!, devnet.keys.users as Hex[], undefined);
  const readsB = options.twoChains ? await seed(used[1]!, devnet.keys.users as Hex[], used[1]!.caip2) : undefined;
  // From here on a block a second, as a live chain: the follower has a head to follow.
  for (const c of used) await createTestClient({ mode: "anvil", transport: http(c.rpcUrl) }).setIntervalMining({ interval: 1 });

  const common = {
    PORT: "0",
    TRUST_ANCHORS_PATH: anchorsPath,
    DELEGATE_PRIVATE_KEY: devnet.keys.delegate,
    // With two chains, 31338 is not a devnet id to the raw-key rule (decisions §27).
    ...(options.twoChains ? { ALLOW_RAW_KEYS: "true" } : {}),
    DATABASE_URL: pg.url,
    DATA_DIR: dir,
    INDEX_POLL_MS: "1000",
    // One client address sends every read: the per-address and in-flight bounds of key status, and the list's
    // computations per address (issue 43), must not refuse them.
    KEY_STATUS_RATE_PER_MINUTE: "1000000",
    KEY_STATUS_MAX_IN_FLIGHT: "1000",
    INDEX_QUERY_RATE_PER_MINUTE: "1000000",
    LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
    ...(options.noAnswerCache ? { INDEX_ANSWER_CACHE_MB: "0" } : {}),
  };
  const env = { ...common, RPC_URL: `http://127.0.0.1:${chains[0]!.counterPort}`, START_BLOCK: String(used[0]!.deployBlock) };
  let twoChainEnv: Record<string, string> | undefined;
  if (options.twoChains) {
    const chainsFile = join(dir, "chains.json");
    writeFileSync(chainsFile, JSON.stringify(chains.map((c, i) => ({
      caip2: c.caip2,
      rpcUrl: `http://127.0.0.1:${c.counterPort}`,
      startBlock: Number(used[i]!.deployBlock),
      role: "attestations",
    }))));
    twoChainEnv = { ...common, CHAINS_FILE: chainsFile };
  }
  return { seconds: options.seconds, noAnswerCache: options.noAnswerCache, dir, pgUrl: pg.url, chains, reads, readsB, env, twoChainEnv, instances: [] };
}

/**
 * Writes the data of the reads on `chain`: an artifact with four assessments by the approved auditor, a subject with
 * ten reviews, a key bound by its did:pkh subject. `chainParam` (the chain's CAIP-2) is added to every chain read.
 */
async function seed(chain: DevnetChain, users: readonly Hex[], chainParam: string | undefined): Promise<Read[]> {
  const [auditor, reviewer, owner, signer] = users as [Hex, Hex, Hex, Hex];
  const writer = easWriter({ rpcUrl: chain.rpcUrl, easAddress: chain.easAddress });
  const encode = (name: string, data: Record<string, unknown>) => (encodeSchemaData(findSchemaByName(name)!.schema, data) as { value: Hex }).value;
  const recipientOf = (did: string) => (didToAddress(did) as { value: Hex }).value;
  const pkh = (key: Hex) => `did:pkh:eip155:${chain.chainId}:${privateKeyToAccount(key).address.toLowerCase()}`;

  const ARTIFACT = artifactDidFromDigest(sha256(stringToBytes("bench reads artifact")));
  const assessments = await writer.multiAttest(auditor, chain.schemaUids["security-assessment"]!, Array.from({ length: 4 }, (_, i) => ({
    recipient: recipientOf(ARTIFACT),
    revocable: false,
    data: encode("security-assessment", {
      subject: ARTIFACT, organization: "Bench Audits", version: `1.${i}`, versionHW: "", payload: '{"findings":0}', payloadVersion: "1",
      payloadSpecURI: "", payloadSpecDigest: "", issuedAt: 1n, effectiveAt: 0n, expiresAt: 0n,
    }),
  })));
  const SHOP = "did:web:shop.bench.example";
  const reviews = await writer.multiAttest(reviewer, chain.schemaUids["user-review"]!, Array.from({ length: 10 }, (_, i) => ({
    recipient: recipientOf(SHOP),
    revocable: false,
    data: encode("user-review", { subject: SHOP, version: "1", ratingValue: BigInt(1 + (i % 5)), reviewBody: `review ${i}`, screenshotUrls: [], proofs: [] }),
  })));
  // A did:pkh subject binds its own key: key status reads the chain only (no DNS or did.json for a did:pkh).
  const KEY_SUBJECT = pkh(owner);
  const KEY = pkh(signer);
  const binding = await writer.attest(owner, chain.schemaUids["key-binding"]!, {
    recipient: recipientOf(KEY_SUBJECT),
    revocable: true,
    data: encode("key-binding", {
      subject: KEY_SUBJECT, keyId: KEY, publicKeyJwk: "", keyPurpose: ["assertionMethod"], proofs: [], issuedAt: 0n, effectiveAt: 0n, expiresAt: 0n,
    }),
  });

  const q = encodeURIComponent;
  const on = chainParam === undefined ? "" : `&chain=${q(chainParam)}`;
  return [
    { name: "GET /v1/artifact-trust", path: `/v1/artifact-trust?artifactDid=${q(ARTIFACT)}${on}`, expect: assessments[0] },
    { name: "GET /v1/key-status", path: `/v1/key-status?subjectDid=${q(KEY_SUBJECT)}&keyDid=${q(KEY)}${on}`, expect: binding.uid },
    { name: "GET /v1/attestations", path: `/v1/attestations?subject=${q(SHOP)}&schema=user-review&limit=25${on}`, expect: reviews.at(-1) },
    // Trust anchors name no chain: on the second chain it is the same read (the control).
    { name: "GET /v1/trust-anchors", path: "/v1/trust-anchors", expect: undefined },
  ];
}
