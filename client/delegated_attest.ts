import type { HexString } from "../ports/eas.ts";
import { type AttestMessage, buildAttestTypedData, ZERO_UID } from "../domain/delegation/mod.ts";
import { NONCE_MOVED } from "../domain/delegation/mod.ts";
import { deriveRecipient, encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { AtsClientError } from "./errors.ts";
import { DEFAULT_BASE_URL, requestJson, serviceUrl } from "./http.ts";
import { fetchTrustAnchors, getChainAnchors, getSchemaAnchor } from "./trust_anchors.ts";

/** Where the service is and how to reach it. */
export type AtsClientOptions = {
  /** Default `http://127.0.0.1:8080`. */
  readonly baseUrl?: string | undefined;
  readonly fetch?: typeof fetch | undefined;
};

/** A schema as the client needs it to prepare a delegated attestation. */
export type SchemaInfo = { readonly uid: HexString; readonly schema: string; readonly revocable: boolean };

/** The `prepared` object of the delegated-attest body; big integers are base-10 strings. */
export type PreparedDelegatedAttestation = {
  readonly delegatedRequest: Record<string, string | number | boolean> & { readonly schema: HexString };
  readonly typedData: {
    readonly domain: { name: string; version: string; chainId: number; verifyingContract: HexString };
    readonly types: ReturnType<typeof buildAttestTypedData>["types"];
    readonly primaryType: "Attest";
    readonly message: Record<string, string | boolean>;
  };
};

/** Options of {@link prepareDelegatedAttestation}. */
export type PrepareDelegatedAttestationOptions = {
  readonly schema: SchemaInfo;
  readonly data: Readonly<Record<string, unknown>>;
  readonly attester: HexString;
  readonly nonce: bigint | string;
  readonly chainId: number;
  readonly easAddress: HexString;
  readonly expirationTime?: bigint | undefined;
  readonly refUID?: HexString | undefined;
  /** Unix seconds; default ten minutes after `nowSeconds`. */
  readonly deadline?: bigint | undefined;
  readonly nowSeconds?: number | undefined;
};


const DEADLINE_AHEAD_SECONDS = 600n;

/** Builds the `prepared` object: data ABI-encoded from the schema string, recipient derived, deadline ten minutes ahead. */
export function prepareDelegatedAttestation(options: PrepareDelegatedAttestationOptions): PreparedDelegatedAttestation {
  const encoded = encodeSchemaData(options.schema.schema, options.data);
  if (!encoded.ok) throw new AtsClientError("INVALID_INPUT", encoded.message);
  const recipient = deriveRecipient(options.data);
  if (!recipient.ok) throw new AtsClientError("INVALID_INPUT", `subject: ${recipient.message}`);
  const now = BigInt(options.nowSeconds ?? Math.floor(Date.now() / 1000));
  const expirationTime = options.expirationTime ?? expiresAtOf(options.data);
  const message: AttestMessage = {
    attester: options.attester,
    schema: options.schema.uid,
    recipient: recipient.value,
    expirationTime,
    revocable: options.schema.revocable,
    refUID: options.refUID ?? ZERO_UID,
    data: encoded.value,
    value: 0n,
    nonce: BigInt(options.nonce),
    deadline: options.deadline ?? now + DEADLINE_AHEAD_SECONDS,
  };
  const typedData = buildAttestTypedData(options, message);
  const strings = stringifyMessage(message);
  return {
    delegatedRequest: { ...strings, easContractAddress: options.easAddress, chainId: options.chainId } as never,
    typedData: { ...typedData, message: strings },
  };
}

/** The typed data of a prepared attestation with big integers restored, ready for `signTypedData`. */
export function signableTypedData(prepared: PreparedDelegatedAttestation) {
  const m = prepared.typedData.message;
  return buildAttestTypedData(
    { chainId: prepared.typedData.domain.chainId, easAddress: prepared.typedData.domain.verifyingContract },
    {
      attester: m.attester as HexString,
      schema: m.schema as HexString,
      recipient: m.recipient as HexString,
      expirationTime: BigInt(m.expirationTime as string),
      revocable: m.revocable as boolean,
      refUID: m.refUID as HexString,
      data: m.data as HexString,
      value: BigInt(m.value as string),
      nonce: BigInt(m.nonce as string),
      deadline: BigInt(m.deadline as string),
    },
  );
}

/** The nonce record of the service. */
export type NonceRecord = { nonce: string; chain: string; chainId: number; easAddress: HexString; elapsed: string };

/**
 * Reads the attester's current EAS nonce from the service, on the chain `chainId` names (a number, a decimal id or
 * CAIP-2; decisions §30): absent, the service's default chain. A chain the service does not serve is 400
 * UNSUPPORTED_CHAIN.
 */
export async function fetchNonce(attester: string, options: AtsClientOptions & { readonly chainId?: number | string | undefined } = {}): Promise<NonceRecord> {
  const chain = options.chainId === undefined ? "" : `&chainId=${encodeURIComponent(String(options.chainId))}`;
  return await request<NonceRecord>(`/v1/nonce?attester=${encodeURIComponent(attester)}${chain}`, undefined, options);
}

/** The delegated-attest success record. */
export type DelegatedAttestResult = {
  success: true;
  txHash: HexString;
  uid: HexString | null;
  blockNumber: number;
  chain: string;
  /** The submission's id (decisions §23): `GET /v1/submissions/{id}`. */
  submissionId?: string;
  elapsed: string;
};

/**
 * Submits a signed prepared attestation; a non-2xx answer throws {@link AtsClientError} with the server's code. With
 * `idempotencyKey` (decisions §23), a retry with the same key after a lost answer gets the first answer and writes
 * nothing twice.
 *
 * Only the relay's success is a result. A 202 (the retry of a request that died after handing its transaction to the
 * chain, answered while that transaction is still on its way: docs/endpoints.md "Retries") is not an attestation: it
 * throws {@link AtsClientError} `SUBMISSION_NOT_SETTLED` with `status` 202 and the answer as `body`, whose submission
 * {@link pendingSubmissionOf} names (wait for it with `waitForSubmission`, or send the same bytes under the same key
 * again). Any other 2xx that is not `{success: true, txHash}` is `INVALID_RESPONSE`. Before, every 2xx body was
 * returned as the result: a 202 was read as an attestation with no uid and no transaction.
 */
export async function submitDelegatedAttestation(
  body: { prepared: PreparedDelegatedAttestation; signature: string; attester: string },
  options: AtsClientOptions & { readonly idempotencyKey?: string | undefined } = {},
): Promise<DelegatedAttestResult> {
  const { body: answer, response } = await requestJson<unknown>("/v1/delegated-attest", {
    baseUrl: options.baseUrl,
    fetch: options.fetch,
    method: "POST",
    body,
    headers: options.idempotencyKey === undefined ? {} : { "idempotency-key": options.idempotencyKey },
  });
  return relaySuccess(answer, response);
}

/** A submission the relay answered as still on its way (a 202): where to read it, and where it stood. */
export type PendingSubmission = {
  readonly submissionId: string;
  /** `pending`, `sent` or `replaced` as the answer said. */
  readonly state: string;
  /** Where to read it: the answer's `Location` (`/v1/submissions/{id}`). */
  readonly location: string;
};

/**
 * The submission still on its way that an error of {@link submitDelegatedAttestation} names (its 202, code
 * `SUBMISSION_NOT_SETTLED`), or of `waitForSubmission` past its tries; undefined for any other error.
 */
export function pendingSubmissionOf(error: unknown): PendingSubmission | undefined {
  if (!(error instanceof AtsClientError) || error.code !== "SUBMISSION_NOT_SETTLED") return undefined;
  const body = typeof error.body === "object" && error.body !== null ? error.body as Record<string, unknown> : {};
  if (typeof body.submissionId !== "string" || body.submissionId === "") return undefined;
  const state = typeof body.state === "string" ? body.state : "pending";
  return { submissionId: body.submissionId, state, location: `/v1/submissions/${encodeURIComponent(body.submissionId)}` };
}

/** The relay's success from a 2xx answer; a 202 or anything else is thrown (see {@link submitDelegatedAttestation}). */
function relaySuccess(answer: unknown, response: Response): DelegatedAttestResult {
  const record = typeof answer === "object" && answer !== null ? answer as Record<string, unknown> : {};
  if (response.status === 202) {
    const fromLocation = /\/v1\/submissions\/([^/?#]+)$/.exec(response.headers.get("location") ?? "")?.[1];
    const submissionId = typeof record.submissionId === "string" && record.submissionId !== "" ? record.submissionId : fromLocation;
    const state = typeof record.state === "string" ? record.state : "pending";
    throw new AtsClientError(
      "SUBMISSION_NOT_SETTLED",
      `The attestation is not written yet: its submission${submissionId === undefined ? "" : ` ${submissionId}`} is still ${state}`,
      { status: 202, body: { ...record, ...(submissionId === undefined ? {} : { submissionId }), state } },
    );
  }
  if (record.success !== true || typeof record.txHash !== "string") {
    throw new AtsClientError("INVALID_RESPONSE", "The relay's answer is not an attestation's success", { status: response.status, body: answer });
  }
  return record as DelegatedAttestResult;
}

/** The public relay's batch route; the private relay's is {@link PRIVATE_RELAY_BATCH_PATH}. */
export const DELEGATED_ATTEST_BATCH_PATH = "/v1/delegated-attest/batch";
/** The private relay's batch route (a session cookie or an access token with `relay:write`). */
export const PRIVATE_RELAY_BATCH_PATH = "/api/private/relay/eas/delegated-attest/batch";

/** One request's result in a batch: its uid, or the single route's refusal of it. */
export type DelegatedAttestBatchItem =
  | { readonly uid: HexString | null }
  | {
    readonly status: number;
    readonly code: string;
    readonly error: string;
    readonly details?: string;
    /** A 429's: the seconds the single route's `Retry-After` would say (the first answer only, not a resumed one). */
    readonly retryAfter?: number;
  };

/** A batch's answer (decisions §23). */
export type DelegatedAttestBatchResult = {
  /** The batch's one submission; null when no request was sent. */
  submissionId: string | null;
  /** The one `multiAttestByDelegation` transaction; null when no request was sent. */
  txHash: HexString | null;
  /** One per request, in order. */
  results: DelegatedAttestBatchItem[];
  chain: string;
  elapsed?: string;
};

/**
 * Submits 1 to 50 signed requests as one batch (decisions §23): the valid ones land in one transaction, and each
 * request gets its own result, in order (a refusal of one request does not throw; a refusal of the batch as a whole
 * throws {@link AtsClientError}). The requests of one attester must be signed for consecutive nonces, in the order
 * given. `path` is {@link PRIVATE_RELAY_BATCH_PATH} for the private relay (each body may carry `subjectDid`).
 */
export async function submitDelegatedAttestBatch(
  requests: readonly { prepared: PreparedDelegatedAttestation; signature: string; attester: string; subjectDid?: string }[],
  options: AtsClientOptions & { readonly idempotencyKey?: string | undefined; readonly path?: string | undefined } = {},
): Promise<DelegatedAttestBatchResult> {
  const { body: answer } = await requestJson<DelegatedAttestBatchResult>(options.path ?? DELEGATED_ATTEST_BATCH_PATH, {
    baseUrl: options.baseUrl,
    fetch: options.fetch,
    method: "POST",
    body: { requests },
    headers: options.idempotencyKey === undefined ? {} : { "idempotency-key": options.idempotencyKey },
  });
  return answer;
}

/** Signs EIP-712 typed data, e.g. a viem account's `signTypedData`. */
export type TypedDataSigner = (typedData: ReturnType<typeof signableTypedData>) => Promise<string>;

/** Options of {@link attestDelegated}. */
export type AttestDelegatedOptions = {
  /** A schema name from the trust anchors (`user-review`, `linked-identifier`, ...). */
  readonly schemaName: string;
  readonly data: Readonly<Record<string, unknown>>;
  readonly attester: HexString;
  readonly sign: TypedDataSigner;
  readonly refUID?: HexString | undefined;
  readonly expirationTime?: bigint | undefined;
  /** The chain to write on (decisions §30): a number, a decimal id or CAIP-2; absent, the service's default chain. */
  readonly chainId?: number | string | undefined;
};

/**
 * Prepares, signs and submits a delegated attestation in one call. When the server says the nonce
 * moved between signing and submission, it fetches the new nonce, rebuilds, re-signs and resubmits once.
 */
export async function attestDelegated(
  input: AttestDelegatedOptions,
  options: AtsClientOptions = {},
): Promise<DelegatedAttestResult> {
  const baseUrl = options.baseUrl ?? DEFAULT_BASE_URL;
  const anchors = await fetchTrustAnchors({ url: serviceUrl(baseUrl, "/v1/trust-anchors"), fetch: options.fetch });
  const attempt = async () => {
    const nonce = await fetchNonce(input.attester, { ...options, chainId: input.chainId });
    // The chain asked for is the chain signed for (decisions §30): an answer naming another (a service misrouted, or
    // lying) never gets a signature valid there.
    if (input.chainId !== undefined && chainIdOf(input.chainId) !== nonce.chainId) {
      throw new AtsClientError("UNSUPPORTED_CHAIN", `The service answered for chain ${nonce.chainId}, not the chain asked for (${String(input.chainId)})`);
    }
    const chain = getChainAnchors(anchors, nonce.chainId);
    const uid = getSchemaAnchor(anchors, nonce.chainId, input.schemaName) as HexString;
    if (chain.easContract.toLowerCase() !== nonce.easAddress.toLowerCase()) {
      throw new AtsClientError("UNSUPPORTED_CHAIN", "The service's EAS address differs from its trust anchors");
    }
    const prepared = prepareDelegatedAttestation({
      schema: schemaInfo(input.schemaName, uid),
      data: input.data,
      attester: input.attester,
      nonce: nonce.nonce,
      chainId: nonce.chainId,
      easAddress: nonce.easAddress,
      refUID: input.refUID,
      expirationTime: input.expirationTime,
    });
    const signature = await input.sign(signableTypedData(prepared));
    return await submitDelegatedAttestation({ prepared, signature, attester: input.attester }, options);
  };
  try {
    return await attempt();
  } catch (error) {
    const moved = error instanceof AtsClientError && error.code === "ATTESTER_MISMATCH" &&
      (error.body as { details?: unknown } | undefined)?.details === NONCE_MOVED;
    if (!moved) throw error;
    return await attempt();
  }
}

/** The decimal chain id of a chain given as a number, a decimal id or an eip155 CAIP-2 id; NaN for anything else. */
function chainIdOf(chain: number | string): number {
  const text = String(chain).trim().replace(/^eip155:/, "");
  return /^[0-9]{1,15}$/.test(text) ? Number(text) : Number.NaN;
}

function schemaInfo(name: string, uid: HexString): SchemaInfo {
  const known = findSchemaByName(name);
  if (known === undefined) throw new AtsClientError("INVALID_INPUT", `Unknown schema ${name}`);
  return { uid, schema: known.schema, revocable: known.revocable };
}

function expiresAtOf(data: Readonly<Record<string, unknown>>): bigint {
  const raw = data.expiresAt;
  if (typeof raw === "bigint") return raw;
  if (typeof raw === "number" && Number.isSafeInteger(raw) && raw >= 0) return BigInt(raw);
  if (typeof raw === "string" && /^[0-9]+$/.test(raw)) return BigInt(raw);
  return 0n;
}

function stringifyMessage(message: AttestMessage): Record<string, string | boolean> {
  const out: Record<string, string | boolean> = {};
  for (const [k, v] of Object.entries(message)) out[k] = typeof v === "bigint" ? v.toString() : v;
  return out;
}

async function request<T>(path: string, body: unknown, options: AtsClientOptions): Promise<T> {
  const { body: parsed } = await requestJson<T>(path, {
    baseUrl: options.baseUrl,
    fetch: options.fetch,
    method: body === undefined ? "GET" : "POST",
    body,
  });
  return parsed;
}
