// The client from its packed tarball in a plain Node project (decisions §26), against a running service
// (ATS_URL, the devnet of scripts/packages_test.sh): a plugin loader's artifact-trust check, a key's status,
// and a delegated attestation signed by a fresh key and sent by the service.
import assert from "node:assert/strict";
import {
  artifactDidOfBytes,
  attestDelegated,
  checkArtifactTrust,
  fetchKeyStatus,
  fetchTrustAnchors,
  listAttestations,
  NO_QUALIFYING_EVIDENCE,
} from "@ats/client";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";

const baseUrl = process.env.ATS_URL;
assert.ok(baseUrl, "ATS_URL is the running service");
const anchors = await fetchTrustAnchors({ url: `${baseUrl}/v1/trust-anchors` });
const [caip2] = Object.keys(anchors.chains);
const chainId = Number(caip2.split(":")[1]);

const account = privateKeyToAccount(generatePrivateKey());

// A plugin loader checking an artifact nobody vouched for: the record loads, and the policy warns.
const artifactDid = await artifactDidOfBytes(new TextEncoder().encode(`a plugin built by ${account.address}`));
const verdict = await checkArtifactTrust(artifactDid, { url: `${baseUrl}/v1/artifact-trust`, pinnedChain: { chainId } });
assert.equal(verdict.failure, undefined, JSON.stringify(verdict.failure));
assert.equal(verdict.warn, true);
assert.deepEqual(verdict.reasons, [NO_QUALIFYING_EVIDENCE]);
assert.equal(verdict.record.artifactDid ?? artifactDid, artifactDid);
console.log("ok - @ats/client checkArtifactTrust: record loaded, warns without qualifying evidence");

// A delegated attestation: the attester holds no ether, signs only; the service sends it.
const subject = `did:web:packages-${account.address.slice(2, 10).toLowerCase()}.example.com`;
const result = await attestDelegated({
  schemaName: "user-review",
  data: { subject, version: "1.0.0", ratingValue: 5, reviewBody: "Installed from npm", screenshotUrls: [], proofs: [] },
  attester: account.address,
  sign: (typedData) => account.signTypedData(typedData),
}, { baseUrl });
assert.equal(result.success, true);
assert.match(result.uid, /^0x[0-9a-f]{64}$/);
const listed = await listAttestations({ subject, schema: "user-review" }, { baseUrl });
assert.deepEqual(listed.items.map((i) => i.attestation.uid), [result.uid]);
console.log("ok - @ats/client attestDelegated: the review is on the chain and listed under its subject");

// The status of a key nobody bound to the subject.
const keyDid = `did:pkh:${caip2}:${account.address}`;
const status = await fetchKeyStatus({ subjectDid: subject, keyDid }, { baseUrl });
assert.equal(status.subjectDid, subject);
assert.equal(status.keyDid, keyDid.toLowerCase()); // the service answers the normalized DID
assert.equal(status.trustLevel, "none");
assert.equal(status.keyBinding, null);
console.log(`ok - @ats/client fetchKeyStatus: ${status.status}, trust ${status.trustLevel}`);
