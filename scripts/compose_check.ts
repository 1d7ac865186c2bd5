// Checks a running deploy/compose.yaml devnet deployment through its balancer (default http://127.0.0.1:8080, or
// the first argument): /readyz, a read (the trust anchors, GET /v1/attestations/{uid}) and a write (a delegated user
// review signed by an Anvil dev key, with the official client helper), then reads the write back through the
// balancer, so whichever instance answers, it sees it. Prints one line per step; exit 1 on the first failure.
// Used by scripts/compose_test.sh.
import { privateKeyToAccount } from "viem/accounts";
import { ANVIL_DEV_KEYS } from "../adapters/devnet/mod.ts";
import { attestDelegated, fetchNonce } from "../client/delegated_attest.ts";

const baseUrl = process.argv[2] ?? "http://127.0.0.1:8080";

function check(condition: boolean, message: string): void {
  if (!condition) throw new Error(message);
}

async function getJson(path: string): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${baseUrl}${path}`, { signal: AbortSignal.timeout(15_000) });
  return { status: response.status, body: await response.json() };
}

try {
  const ready = await getJson("/readyz");
  check(ready.status === 200, `/readyz answered ${ready.status} ${JSON.stringify(ready.body)}`);
  console.log("compose: /readyz 200 through the balancer");

  const anchors = await getJson("/v1/trust-anchors");
  const chains = (anchors.body as { chains?: Record<string, { easContract?: string }> }).chains ?? {};
  check(anchors.status === 200 && chains["eip155:31337"]?.easContract !== undefined, `GET /v1/trust-anchors answered ${anchors.status}`);
  console.log(`compose: read GET /v1/trust-anchors 200 (EAS ${chains["eip155:31337"]!.easContract})`);

  const user = privateKeyToAccount(ANVIL_DEV_KEYS[3]!);
  const before = await fetchNonce(user.address, { baseUrl });
  const result = await attestDelegated(
    {
      schemaName: "user-review",
      data: { subject: "did:web:compose.example", version: "1", ratingValue: 4, reviewBody: "through the balancer", screenshotUrls: [], proofs: [] },
      attester: user.address,
      sign: (typedData) => user.signTypedData(typedData),
    },
    { baseUrl },
  );
  check(result.success === true && result.uid !== null, `the write failed: ${JSON.stringify(result)}`);
  console.log(`compose: write POST delegated attestation ${result.uid} in block ${result.blockNumber}`);
  const after = await fetchNonce(user.address, { baseUrl });
  check(BigInt(after.nonce) === BigInt(before.nonce) + 1n, `the attester's nonce went from ${before.nonce} to ${after.nonce}`);
  // Every instance reads the same index: ask a few times, the balancer spreads them over the three.
  for (let i = 0; i < 6; i++) {
    const one = await getJson(`/v1/attestations/${result.uid}`);
    const text = JSON.stringify(one.body);
    check(one.status === 200 && text.toLowerCase().includes(result.uid!.toLowerCase()), `read ${i + 1} of GET /v1/attestations/${result.uid} answered ${one.status}: ${text.slice(0, 300)}`);
  }
  console.log("compose: the write read back six times through the balancer");
  console.log("compose: ok");
} catch (error) {
  console.error(`compose: FAILED: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
