/**
 * Base encodings (RFC 4648) and multiformats varints, written out so the domain needs no codec dependency.
 */

const BASE32_LOWER = "abcdefghijklmnopqrstuvwxyz234567";
const BASE64URL_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/** Encodes bytes as RFC 4648 base32, lowercase, without padding. */
export function base32LowerEncode(bytes: Uint8Array): string {
  return encodeBits(bytes, BASE32_LOWER, 5);
}

/** Decodes unpadded lowercase base32; undefined unless it is the canonical encoding of some bytes. */
export function base32LowerDecode(text: string): Uint8Array | undefined {
  return decodeBits(text, BASE32_LOWER, 5, true);
}

/** Encodes bytes as base64url without padding. */
export function base64UrlEncode(bytes: Uint8Array): string {
  return encodeBits(bytes, BASE64URL_ALPHABET, 6);
}

/** Decodes unpadded base64url; undefined on a bad character or an impossible length. */
export function base64UrlDecode(text: string): Uint8Array | undefined {
  // Like common base64 decoders, leftover bits are not checked: did:jwk identity rests on the decoded key.
  return decodeBits(text, BASE64URL_ALPHABET, 6, false);
}

function encodeBits(bytes: Uint8Array, alphabet: string, width: number): string {
  let out = "";
  let buffer = 0;
  let bits = 0;
  const mask = (1 << width) - 1;
  for (const byte of bytes) {
    buffer = ((buffer << 8) | byte) & 0xffff;
    bits += 8;
    while (bits >= width) {
      bits -= width;
      out += alphabet[(buffer >> bits) & mask];
    }
  }
  if (bits > 0) out += alphabet[(buffer << (width - bits)) & mask];
  return out;
}

function decodeBits(text: string, alphabet: string, width: number, strict: boolean): Uint8Array | undefined {
  const totalBits = text.length * width;
  // A trailing group too short to hold a whole byte means the text was cut.
  if (totalBits % 8 >= width) return undefined;
  const out = new Uint8Array(Math.floor(totalBits / 8));
  let buffer = 0;
  let bits = 0;
  let index = 0;
  for (const char of text) {
    const value = alphabet.indexOf(char);
    if (value === -1 || char.length !== 1) return undefined;
    buffer = ((buffer << width) | value) & 0xffff;
    bits += width;
    if (bits >= 8) {
      bits -= 8;
      out[index++] = (buffer >> bits) & 0xff;
    }
  }
  if (strict && bits > 0 && (buffer & ((1 << bits) - 1)) !== 0) return undefined;
  return out;
}

/** Reads unsigned LEB128 varints (multiformats) from `bytes` one after the other. */
export function varintReader(bytes: Uint8Array) {
  let offset = 0;
  return {
    offset: () => offset,
    /**
     * Reads an unsigned LEB128 varint; undefined when truncated, longer than 7 bytes, or not in its shortest form
     * (a last byte of 0 after another, as the multiformats varint requires): `81 00` read as 1 made a second DID of
     * the same content (`did:artifact`) or key (`did:key`).
     */
    next(): number | undefined {
      let value = 0;
      for (let shift = 0; shift < 49; shift += 7) {
        const byte = bytes[offset];
        if (byte === undefined) return undefined;
        offset++;
        value += (byte & 0x7f) * 2 ** shift;
        if ((byte & 0x80) === 0) return byte === 0 && shift > 0 ? undefined : value;
      }
      return undefined;
    },
  };
}

const BASE58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/** Decodes base58btc (Bitcoin alphabet, leading `1`s are zero bytes); undefined on a bad character. */
export function base58btcDecode(text: string): Uint8Array | undefined {
  let value = 0n;
  for (const char of text) {
    const digit = BASE58_ALPHABET.indexOf(char);
    if (digit === -1) return undefined;
    value = value * 58n + BigInt(digit);
  }
  const body: number[] = [];
  for (; value > 0n; value >>= 8n) body.unshift(Number(value & 0xffn));
  let zeros = 0;
  while (zeros < text.length && text[zeros] === "1") zeros++;
  return Uint8Array.from([...new Array<number>(zeros).fill(0), ...body]);
}

/** Encodes bytes as base58btc (Bitcoin alphabet). */
export function base58btcEncode(bytes: Uint8Array): string {
  let value = 0n;
  for (const byte of bytes) value = (value << 8n) | BigInt(byte);
  let out = "";
  for (; value > 0n; value /= 58n) out = BASE58_ALPHABET[Number(value % 58n)] + out;
  for (let i = 0; i < bytes.length && bytes[i] === 0; i++) out = `1${out}`;
  return out;
}
