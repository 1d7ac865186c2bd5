/** did:artifact: `b` + base32-lower of a CIDv1 with the raw codec and a sha2-256 multihash. */
import type { Hex } from "viem";
import { ok, type Result } from "../result.ts";
import { HASH_FORMAT, invalid } from "./_private.ts";
import { base32LowerDecode, base32LowerEncode, varintReader } from "./codecs.ts";

/** A parsed did:artifact. */
export type ArtifactDid = {
  /** The DID exactly as given; a valid did:artifact is its own canonical form. */
  readonly did: string;
  /** The method-specific identifier: `b` + base32-lower CIDv1. */
  readonly identifier: string;
  /** The SHA-256 digest of the artifact, lowercase hex. */
  readonly digest: Hex;
};

const ARTIFACT_PREFIX = "did:artifact:";
const CID_VERSION = 0x01;
const CODEC_RAW = 0x55;
const MULTIHASH_SHA2_256 = 0x12;
const SHA256_LENGTH = 32;
const hexByte = (n: number) => `0x${n.toString(16).padStart(2, "0")}`;

/** Parses a did:artifact: `b` + base32-lower of a CIDv1 with the raw codec and a sha2-256 multihash. */
export function parseArtifactDid(did: string): Result<ArtifactDid, "INVALID_DID"> {
  if (typeof did !== "string" || !did.startsWith(ARTIFACT_PREFIX)) return invalid("Expected a did:artifact DID");
  const identifier = did.slice(ARTIFACT_PREFIX.length);
  if (identifier === "") return invalid("Missing method-specific identifier");
  const prefix = String.fromCodePoint(identifier.codePointAt(0) ?? 0);
  if (prefix !== "b") return invalid(`Invalid multibase prefix "${prefix}", expected "b" (base32lower)`);
  const bytes = base32LowerDecode(identifier.slice(1));
  if (bytes === undefined) return invalid("Failed to decode base32 CID: not canonical base32lower");
  const reader = varintReader(bytes);
  const version = reader.next();
  if (version !== CID_VERSION) return invalid(`CID version must be 1, got ${describe(version)}`);
  const codec = reader.next();
  if (codec !== CODEC_RAW) return invalid(`Multicodec must be raw (0x55), got ${describeHex(codec)}`);
  const hashFunction = reader.next();
  if (hashFunction !== MULTIHASH_SHA2_256) {
    return invalid(`Multihash function must be sha2-256 (0x12), got ${describeHex(hashFunction)}`);
  }
  const length = reader.next();
  const digest = bytes.subarray(reader.offset());
  if (length !== SHA256_LENGTH || digest.length !== SHA256_LENGTH) {
    return invalid(`SHA-256 digest must be 32 bytes, got ${length === SHA256_LENGTH ? digest.length : describe(length)}`);
  }
  return ok({ did, identifier, digest: toHex(digest) });
}

/** Builds the did:artifact of a SHA-256 digest; throws a TypeError when the digest is not 32 bytes of hex (a bug). */
export function artifactDidFromDigest(digest: Hex): string {
  if (!HASH_FORMAT.test(digest)) throw new TypeError("Digest must be 32-byte hex");
  const bytes = new Uint8Array(4 + SHA256_LENGTH);
  bytes.set([CID_VERSION, CODEC_RAW, MULTIHASH_SHA2_256, SHA256_LENGTH]);
  for (let i = 0; i < SHA256_LENGTH; i++) bytes[4 + i] = Number.parseInt(digest.slice(2 + i * 2, 4 + i * 2), 16);
  return `${ARTIFACT_PREFIX}b${base32LowerEncode(bytes)}`;
}

const describe = (n: number | undefined) => (n === undefined ? "nothing" : String(n));
const describeHex = (n: number | undefined) => (n === undefined ? "nothing" : hexByte(n));

function toHex(bytes: Uint8Array): Hex {
  let hex = "0x";
  for (const byte of bytes) hex += byte.toString(16).padStart(2, "0");
  return hex as Hex;
}
