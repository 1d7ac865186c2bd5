/** A 0x-prefixed hex string. */
export type HexString = `0x${string}`;

/** EAS `AttestationRequestData`. */
export type AttestationRequestData = {
  readonly recipient: HexString;
  readonly expirationTime: bigint;
  readonly revocable: boolean;
  readonly refUID: HexString;
  readonly data: HexString;
  readonly value: bigint;
};

/** The arguments of EAS `attestByDelegation`, already validated and normalized. */
export type DelegatedAttestCall = {
  readonly schema: HexString;
  readonly attester: HexString;
  readonly deadline: bigint;
  readonly data: AttestationRequestData;
  readonly signature: { readonly v: number; readonly r: HexString; readonly s: HexString };
};

/** The attester's EAS nonce, or why it could not be read. */
export type NonceRead = { readonly ok: true; readonly nonce: bigint } | { readonly ok: false; readonly reason: "rpc-error" };

/** Reads EAS state the delegated-attest flow needs. */
export interface EasReader {
  readonly chainId: number;
  readonly easAddress: HexString;
  readonly getAttesterNonce: (attester: HexString) => Promise<NonceRead>;
}

/** What a dry run of the transaction said. */
export type Simulation =
  | { readonly ok: true; readonly gas: bigint }
  | { readonly ok: false; readonly reason: "reverted"; readonly errorName: string }
  | { readonly ok: false; readonly reason: "insufficient-funds" }
  | { readonly ok: false; readonly reason: "rpc-error" };

/** The outcome of sending the transaction. */
export type Submission =
  | {
    readonly ok: true;
    readonly txHash: HexString;
    readonly blockNumber: bigint;
    /** The uid of the first `Attested` log, `null` when the receipt has none. */
    readonly uid: HexString | null;
  }
  /** Nothing reached the chain; the same request may be retried. */
  | { readonly ok: false; readonly reason: "not-broadcast" }
  /** Mined, and reverted. */
  | { readonly ok: false; readonly reason: "reverted"; readonly txHash: HexString; readonly blockNumber: bigint }
  /** Broadcast, but the receipt could not be read in time. */
  | { readonly ok: false; readonly reason: "unknown-outcome"; readonly txHash: HexString };

/** Options of {@link DelegateSubmitter.submit}. */
export type SubmitOptions = {
  readonly gas: bigint;
  /** Called with the transaction hash after signing and before broadcast, so it can be stored first. */
  readonly onSigned: (txHash: HexString) => Promise<void>;
};

/** The service's delegate wallet: simulates and submits `attestByDelegation`, paying gas. */
export interface DelegateSubmitter {
  readonly address: HexString;
  readonly simulate: (call: DelegatedAttestCall) => Promise<Simulation>;
  readonly submit: (call: DelegatedAttestCall, options: SubmitOptions) => Promise<Submission>;
}
