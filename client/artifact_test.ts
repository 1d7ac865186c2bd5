import { describe, expect, test } from "bun:test";
import { sha256 } from "viem";
import { artifactDidFromDigest, parseArtifactDid } from "../domain/did/mod.ts";
import { artifactDidOfBytes } from "./artifact.ts";

describe("artifactDidOfBytes()", () => {
  test("hashes with WebCrypto into the did:artifact the service reads", async () => {
    const bytes = new TextEncoder().encode("a plugin");
    const did = await artifactDidOfBytes(bytes);
    expect(did).toBe(artifactDidFromDigest(sha256(bytes)));
    expect(parseArtifactDid(did).ok).toBe(true);
    expect(await artifactDidOfBytes(bytes.buffer as ArrayBuffer)).toBe(did);
    // The empty file's CID, as any IPFS tool gives it for raw sha2-256.
    expect(await artifactDidOfBytes(new Uint8Array())).toBe("did:artifact:bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku");
  });
});
