/**
 * A remote signer speaking `eth_signTransaction` and `eth_signTypedData_v4` (decisions §27): Web3Signer, Clef's
 * compatible API, a node holding the key. Every answer is checked before it is used: the transaction must be the
 * one asked for, signed by the configured address; the typed-data signature must recover to it (low s). Anything
 * else is a refusal, never a transaction sent.
 */
import {
  getAddress,
  getTypesForEIP712Domain,
  hashTypedData,
  keccak256,
  parseTransaction,
  recoverAddress,
  serializeTransaction,
  type TransactionSerializableEIP1559,
} from "viem";
import type { HexString } from "../../ports/eas.ts";
import type { EthereumSigner, SignerRole, TransactionFields, TypedDataInput } from "../../ports/signer.ts";
import { createAudit, type SignerAuditDeps } from "./_audit.ts";
import { SignerError } from "./_digest_signer.ts";
import { curveOrder } from "./_ecdsa.ts";
import { readCapped } from "../https/mod.ts";

/** Options of {@link openJsonRpcSigner}. */
export type JsonRpcSignerOptions = {
  readonly role: SignerRole;
  readonly audit: SignerAuditDeps;
  /** Replaces `fetch` (tests). */
  readonly fetchFn?: typeof fetch | undefined;
};

const HALF_ORDER = curveOrder("secp256k1") >> 1n;
/** An answer may be this much larger than twice the request (a signature, the transaction's own fields, JSON). */
const MIN_ANSWER_CAP = 64 * 1024;

/** An Ethereum signer at `url` for `address`; nothing is asked of it until the first signature. */
export function openJsonRpcSigner(url: string, address: HexString, options: JsonRpcSignerOptions): EthereumSigner {
  const from = getAddress(address);
  const fetchFn = options.fetchFn ?? fetch;
  let id = 0;
  const call = async <T>(method: string, params: unknown[]): Promise<T> => {
    let response: Response;
    const request = JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params });
    // The answer carries what was asked (a transaction's calldata) and a signature: about the request's size at most.
    const maxAnswerBytes = MIN_ANSWER_CAP + 2 * request.length;
    try {
      response = await fetchFn(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: request,
        signal: AbortSignal.timeout(options.audit.timeoutMs),
      });
    } catch (error) {
      const timeout = error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError");
      throw new SignerError(timeout ? "timeout" : "unavailable", timeout ? `${method} timed out` : `${method}: the signer cannot be reached`);
    }
    if (!response.ok) {
      await response.body?.cancel().catch(() => {});
      throw new SignerError("unavailable", `${method}: the signer answered HTTP ${response.status}`);
    }
    // An answer larger than the request could make is refused as it streams in, never held whole (a 512 MB answer took
    // the process's memory past 880 MB before it was refused).
    const bytes = await readCapped(response, maxAnswerBytes, AbortSignal.timeout(options.audit.timeoutMs));
    if (bytes === "too-large") throw new SignerError("refused", `${method}: the signer's answer is larger than ${maxAnswerBytes} bytes`);
    if (bytes === "error") throw new SignerError("unavailable", `${method}: the signer's answer could not be read`);
    let body: { result?: unknown; error?: { code?: unknown; message?: unknown } };
    try {
      body = JSON.parse(new TextDecoder().decode(bytes)) as typeof body;
    } catch {
      throw new SignerError("unavailable", `${method}: the signer's answer is not JSON`);
    }
    if (body.error !== undefined) throw new SignerError("refused", `${method}: the signer refused (code ${String(body.error.code)})`);
    return body.result as T;
  };
  const audit = createAudit({ role: options.role, backend: "jsonrpc", key: from }, options.audit);

  return {
    role: options.role,
    backend: "jsonrpc",
    address: from,
    raw: false,
    state: audit.state,
    close: () => Promise.resolve(),
    signTransaction: (tx, context) =>
      audit.run(context, async () => {
        const raw = await call<unknown>("eth_signTransaction", [requestOf(from, tx)]);
        // Web3Signer and Anvil answer the raw hex; geth and Clef `{ raw, tx }`.
        const bytes = typeof raw === "object" && raw !== null && typeof (raw as { raw?: unknown }).raw === "string" ? (raw as { raw: string }).raw : raw;
        if (typeof bytes !== "string" || !/^0x02[0-9a-fA-F]+$/.test(bytes)) throw new SignerError("refused", "eth_signTransaction did not answer a type-2 transaction");
        const digest = await checkTransaction(bytes as HexString, tx, from);
        return { ok: true as const, raw: bytes as HexString, txHash: keccak256(bytes as HexString), digest };
      }),
    signTypedData: (typedData, context) =>
      audit.run(context, async () => {
        const signature = await call<unknown>("eth_signTypedData_v4", [from, JSON.stringify(withDomainType(typedData), (_, v) => typeof v === "bigint" ? v.toString() : v)]);
        if (typeof signature !== "string" || !/^0x[0-9a-fA-F]{130}$/.test(signature)) {
          throw new SignerError("refused", "eth_signTypedData_v4 did not answer a 65-byte signature");
        }
        const digest = hashTypedData(typedData as Parameters<typeof hashTypedData>[0]);
        const normalized = await checkTypedSignature(signature as HexString, digest, from);
        return { ok: true as const, signature: normalized, digest };
      }),
  };
}

/**
 * The typed data with its `EIP712Domain` type written out, as EIP-712's JSON form has it: geth's typed-data code
 * (Clef's) refuses a message whose domain has fields the types do not declare, so the start-up self-test failed on it.
 * The digest is the same either way (the domain type is derived from the domain's fields).
 */
function withDomainType(typedData: TypedDataInput): TypedDataInput {
  const types = typedData.types as Record<string, unknown>;
  if ("EIP712Domain" in types) return typedData;
  const domain = getTypesForEIP712Domain({ domain: typedData.domain as Parameters<typeof getTypesForEIP712Domain>[0]["domain"] });
  return { ...typedData, types: { EIP712Domain: domain, ...types } } as TypedDataInput;
}

/** The transaction as `eth_signTransaction` takes it. */
function requestOf(from: HexString, tx: TransactionFields): Record<string, string> {
  const q = (n: bigint | number) => `0x${n.toString(16)}`;
  return {
    from,
    to: tx.to,
    data: tx.data,
    input: tx.data,
    gas: q(tx.gas),
    maxFeePerGas: q(tx.maxFeePerGas),
    maxPriorityFeePerGas: q(tx.maxPriorityFeePerGas),
    nonce: q(tx.nonce),
    value: q(tx.value),
    chainId: q(tx.chainId),
    type: "0x2",
  };
}

/**
 * Checks that `raw` is `tx`, signed by `from` with low s; returns the digest signed. A transaction signed by another
 * key would be sent from another wallet: the node holds it pending on that wallet's nonce while the service counts the
 * delegate's nonce as spent, and every later send of the delegate waits behind the gap.
 */
async function checkTransaction(raw: HexString, tx: TransactionFields, from: HexString): Promise<HexString> {
  let parsed: ReturnType<typeof parseTransaction>;
  try {
    parsed = parseTransaction(raw);
  } catch {
    throw new SignerError("refused", "eth_signTransaction answered bytes that are not a transaction");
  }
  const same = parsed.type === "eip1559" && parsed.chainId === tx.chainId && parsed.nonce === tx.nonce &&
    parsed.to?.toLowerCase() === tx.to.toLowerCase() && (parsed.data ?? "0x").toLowerCase() === tx.data.toLowerCase() &&
    parsed.gas === tx.gas && parsed.maxFeePerGas === tx.maxFeePerGas && parsed.maxPriorityFeePerGas === tx.maxPriorityFeePerGas &&
    (parsed.value ?? 0n) === tx.value && (parsed.accessList ?? []).length === 0;
  if (!same || parsed.r === undefined || parsed.s === undefined || parsed.yParity === undefined) {
    throw new SignerError("refused", "eth_signTransaction answered another transaction than the one asked for");
  }
  if (BigInt(parsed.s) > HALF_ORDER) throw new SignerError("refused", "eth_signTransaction answered a high-s signature");
  const unsigned: TransactionSerializableEIP1559 = {
    type: "eip1559",
    chainId: tx.chainId,
    nonce: tx.nonce,
    to: tx.to,
    data: tx.data,
    gas: tx.gas,
    maxFeePerGas: tx.maxFeePerGas,
    maxPriorityFeePerGas: tx.maxPriorityFeePerGas,
    value: tx.value,
  };
  const digest = keccak256(serializeTransaction(unsigned));
  let signer: string;
  try {
    signer = await recoverAddress({ hash: digest, signature: { r: parsed.r, s: parsed.s, yParity: parsed.yParity } });
  } catch {
    throw new SignerError("refused", "eth_signTransaction answered a signature that does not recover");
  }
  if (signer.toLowerCase() !== from.toLowerCase()) throw new SignerError("refused", "eth_signTransaction answered a transaction signed by another key");
  // The bytes must be the canonical encoding: a field written in a longer form (value 0 as 0x00, not 0x80) parses the
  // same, but the node refuses the bytes and their hash is not the transaction's, so a faulty signer passed for a
  // chain that refused the transaction (500 SUBMISSION_FAILED, the signer counted healthy).
  if (serializeTransaction(unsigned, { r: parsed.r, s: parsed.s, yParity: parsed.yParity }).toLowerCase() !== raw.toLowerCase()) {
    throw new SignerError("refused", "eth_signTransaction answered the transaction in a non-canonical encoding");
  }
  return digest;
}

/** Checks a typed-data signature recovers to `from` with low s; answers it with v 27 or 28. */
async function checkTypedSignature(signature: HexString, digest: HexString, from: HexString): Promise<HexString> {
  const s = BigInt(`0x${signature.slice(66, 130)}`);
  if (s > HALF_ORDER) throw new SignerError("refused", "eth_signTypedData_v4 answered a high-s signature");
  const v = Number.parseInt(signature.slice(130), 16);
  const parity = v === 0 || v === 27 ? 0 : v === 1 || v === 28 ? 1 : undefined;
  if (parity === undefined) throw new SignerError("refused", "eth_signTypedData_v4 answered an unknown v");
  const normalized = `${signature.slice(0, 130)}${(27 + parity).toString(16)}` as HexString;
  let recovered: string;
  try {
    recovered = await recoverAddress({ hash: digest, signature: normalized });
  } catch {
    throw new SignerError("refused", "eth_signTypedData_v4 answered a signature that does not recover");
  }
  if (recovered.toLowerCase() !== from.toLowerCase()) throw new SignerError("refused", "eth_signTypedData_v4 answered a signature of another key");
  return normalized;
}
