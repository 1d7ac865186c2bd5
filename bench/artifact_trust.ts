/**
 * Artifact-trust benchmark on the devnet: for artifacts with 0, 50 and 500 candidates spread over the
 * four policy schemas, latency (p50/p95) and JSON-RPC calls and HTTP round trips per request. Since issue 34 the
 * answers come from the attestation index alone (its follower read the candidates once), so the request path makes
 * no JSON-RPC call; the follower's own calls are not counted here. Latencies are also
 * given as a ratio to one raw `eth_blockNumber` against the same Anvil, measured in the same run.
 *
 *   bun run bench/artifact_trust.ts [requests per artifact, default 20]
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Hex, sha256, stringToBytes } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { artifactDidFromDigest, didToAddress } from "../domain/did/mod.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { rpcBusyClock } from "./_rpc_busy.ts";
import { startStack } from "../e2e/harness.ts";
import { easWriter } from "../e2e/support/eas_writer.ts";
import type { TrustAnchors } from "../ports/trust_anchors.ts";

const REQUESTS = Number(process.argv[2] ?? 20);
const SIZES = [0, 50, 500];
const PER_TX = 8;

const rpcBusy = rpcBusyClock();
const stack = await startStack({ wrapRpcFetch: rpcBusy.wrap });
const { devnet } = stack;
const [auditor, certifier, controller] = devnet.keys.users as [Hex, Hex, Hex];
const writer = easWriter({ rpcUrl: devnet.rpcUrl, easAddress: devnet.easAddress });
const encode = (name: string, data: Record<string, unknown>) => (encodeSchemaData(findSchemaByName(name)!.schema, data) as { value: Hex }).value;
const pkh = (key: Hex) => `did:pkh:eip155:${devnet.chainId}:${privateKeyToAccount(key).address.toLowerCase()}`;
const PUBLISHER = "did:web:publisher.bench";

// Anchors: the devnet's plus an approved auditor and certifier.
const anchors = JSON.parse(readFileSync(devnet.trustAnchorsPath, "utf8")) as TrustAnchors;
const validFrom = anchors.registries[0]!.issuers[0]!.validFrom;
const anchorsPath = join(stack.dir, "bench-anchors.json");
writeFileSync(anchorsPath, JSON.stringify({
  ...anchors,
  registries: [{
    type: "approved-issuers",
    issuers: [
      ...anchors.registries[0]!.issuers,
      { address: privateKeyToAccount(auditor).address, label: "Bench Audits", schemas: ["security-assessment"], status: "active", validFrom },
      { address: privateKeyToAccount(certifier).address, label: "Bench Certs", schemas: ["certification"], status: "active", validFrom },
    ],
  }],
}));
const service = await stack.restartService({ TRUST_ANCHORS_PATH: anchorsPath });

await writer.attest(devnet.keys.witness, devnet.schemaUids["controller-witness"]!, {
  recipient: (didToAddress(PUBLISHER) as { value: Hex }).value,
  data: encode("controller-witness", { subject: PUBLISHER, controller: pkh(controller), method: "dns-txt", observedAt: 1 }),
  revocable: false,
});

async function seed(did: string, n: number) {
  const now = (await writer.client.getBlock()).timestamp;
  const recipient = (didToAddress(did) as { value: Hex }).value;
  const times = { issuedAt: now, effectiveAt: 0n, expiresAt: 0n };
  const kinds: [Hex, string, Hex][] = [
    [auditor, "security-assessment", encode("security-assessment", {
      subject: did, organization: "Bench Audits", version: "1", versionHW: "", payload: '{"findings":0}', payloadVersion: "1",
      payloadSpecURI: "", payloadSpecDigest: "", ...times,
    })],
    [certifier, "certification", encode("certification", {
      subject: did, organization: "Bench Certs", version: "1", versionHW: "", subjectURI: "", programID: "p", programURI: "", assessor: "",
      assessorURI: "", certificationLevel: "L1", outcome: "pass", reportURI: "", reportDigest: "", payload: "", payloadVersion: "",
      payloadSpecURI: "", payloadSpecDigest: "", ...times,
    })],
    [controller, "responsibility-claim", encode("responsibility-claim", {
      responsibleParty: PUBLISHER, subject: did, subjectLabel: "bench", responsibilityType: ["creator"], proofs: [], ...times,
    })],
    [controller, "linked-identifier", encode("linked-identifier", { subject: did, linkedId: PUBLISHER, proofs: [], ...times })],
  ];
  for (const [i, [key, schema, data]] of kinds.entries()) {
    let remaining = Math.floor(n / 4) + (i < n % 4 ? 1 : 0);
    const revocable = findSchemaByName(schema)!.revocable;
    while (remaining > 0) {
      const batch = Math.min(PER_TX, remaining);
      await writer.multiAttest(key, devnet.schemaUids[schema]!, Array.from({ length: batch }, () => ({ recipient, data, revocable })));
      remaining -= batch;
    }
  }
}

function pct(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

const baselines: number[] = [];
for (let i = 0; i < 50; i++) {
  const t = performance.now();
  const res = await fetch(devnet.rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: i, method: "eth_blockNumber", params: [] }),
  });
  await res.json();
  baselines.push(performance.now() - t);
}
const baseline = pct(baselines, 50);

console.log(`artifact-trust bench: ${REQUESTS} sequential requests per artifact; baseline eth_blockNumber p50 ${baseline.toFixed(2)} ms`);
console.log("candidates | verified | p50 ms | p95 ms | p50/baseline | RPC wait ms/req | JSON-RPC calls/req | HTTP round trips/req | calls by method");
try {
  for (const n of SIZES) {
    const did = artifactDidFromDigest(sha256(stringToBytes(`bench artifact ${n}`)));
    await seed(did, n);
    // Written straight to the chain: the service's index follower polls once before the reads (decisions §21).
    await stack.sync();
    const url = `${service.url}/v1/artifact-trust?artifactDid=${did}`;
    for (let i = 0; i < 2; i++) await (await fetch(url)).arrayBuffer();
    const times: number[] = [];
    stack.rpc.reset();
    rpcBusy.reset();
    let verified = 0;
    for (let i = 0; i < REQUESTS; i++) {
      const t = performance.now();
      const response = await fetch(url);
      const body = (await response.json()) as { summary?: { totalQueried: number; totalVerified: number } };
      times.push(performance.now() - t);
      if (response.status !== 200 || body.summary?.totalQueried !== n) throw new Error(`unexpected answer for ${n}: ${response.status}`);
      verified = body.summary.totalVerified;
    }
    const methods = stack.rpc.methods();
    const counts = new Map<string, number>();
    for (const m of methods) counts.set(m, (counts.get(m) ?? 0) + 1);
    const byMethod = [...counts].map(([m, count]) => `${m} ${(count / REQUESTS).toFixed(1)}`);
    console.log(
      [
        String(n).padStart(10),
        String(verified).padStart(8),
        pct(times, 50).toFixed(1).padStart(6),
        pct(times, 95).toFixed(1).padStart(6),
        (pct(times, 50) / baseline).toFixed(1).padStart(12),
        (rpcBusy.ms() / REQUESTS).toFixed(1).padStart(15),
        (methods.length / REQUESTS).toFixed(1).padStart(18),
        (stack.rpc.roundTrips() / REQUESTS).toFixed(1).padStart(20),
        byMethod.join(", "),
      ].join(" | "),
    );
  }
} finally {
  await stack.stop();
}
