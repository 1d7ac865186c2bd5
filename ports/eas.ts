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
export type NonceRead =
  | {
    readonly ok: true;
    readonly nonce: bigint;
    /** With `withCode`: the attester has code (a smart-contract wallet), read in the same batch; absent means no. */
    readonly isContract?: boolean | undefined;
  }
  | { readonly ok: false; readonly reason: "rpc-error" };

/** The factory call that deploys a counterfactual wallet, from an ERC-6492 signature. */
export type WalletDeployment = { readonly factory: HexString; readonly factoryCalldata: HexString };

/** Whether a contract wallet accepts a signature (ERC-1271), or the chain could not be asked. */
export type ContractSignatureCheck = "valid" | "invalid" | "rpc-error";

/** An attestation EAS holds, as much of it as a write that refers to it (by `refUID`) needs. */
export type StoredAttestation = {
  readonly uid: HexString;
  readonly schema: HexString;
  readonly attester: HexString;
  readonly recipient: HexString;
  /** Unix seconds; 0 = not revoked. */
  readonly revocationTime: bigint;
  readonly data: HexString;
};

/** An attestation read by uid: `null` when EAS holds none under it; a failure when the chain could not be asked. */
export type AttestationRead =
  | { readonly ok: true; readonly attestation: StoredAttestation | null }
  | { readonly ok: false; readonly reason: "rpc-error" };

/** Reads EAS state the delegated-attest flow needs. */
export interface EasReader {
  readonly chainId: number;
  readonly easAddress: HexString;
  /** The attester's EAS nonce; `withCode` also asks whether the attester is a contract (one more call, same batch). */
  readonly getAttesterNonce: (attester: HexString, options?: { readonly withCode?: boolean }) => Promise<NonceRead>;
  /**
   * Asks the chain whether `signer` accepts `signature` for `digest` the way EAS does (`isValidSignature`,
   * ERC-1271); with `deployment`, as it would once its factory ran (ERC-6492, a read-only call: nothing is
   * deployed). Absent: only EOA signatures are accepted.
   */
  readonly checkContractSignature?: (input: {
    readonly signer: HexString;
    readonly digest: HexString;
    readonly signature: HexString;
    readonly deployment?: WalletDeployment | undefined;
  }) => Promise<ContractSignatureCheck>;
  /** The attestation under `uid` at the head (EAS `getAttestation`: one call); the private relay's refUID rule reads it. */
  readonly getAttestation?: (uid: HexString) => Promise<AttestationRead>;
}

/** What a dry run of the transaction said. */
export type Simulation =
  | { readonly ok: true; readonly gas: bigint }
  | { readonly ok: false; readonly reason: "reverted"; readonly errorName: string }
  | { readonly ok: false; readonly reason: "insufficient-funds" }
  /**
   * The node's estimate found no gas limit up to its cap (a block's, or the `maxGas` asked) that the transaction fits:
   * it can never be mined (or not within what is allowed).
   */
  | { readonly ok: false; readonly reason: "too-much-gas" }
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
  /**
   * Provably never broadcast: the node refused the transaction and does not hold it (asked by hash after
   * the failed send), or the signed transaction could not be recorded and so was not sent. No gas was spent: the
   * caller gives back what it charged (decisions §23). The same request may be retried.
   */
  | { readonly ok: false; readonly reason: "not-broadcast" }
  /**
   * A read the send needs before anything is signed failed (the wallet's pending nonce, or its fees): nothing was
   * signed or sent and no nonce was used, as when the balance read or the simulation fails (500 `RPC_ERROR`, an answer
   * that did nothing). Never a send whose bytes may have left: that is `not-broadcast` once the node was asked, or
   * `unknown-outcome`.
   */
  | { readonly ok: false; readonly reason: "rpc-error" }
  /**
   * The wallet's nonce, shared by the service's instances under a lock in the storage (decisions §21), could not be
   * taken: the storage failed, and nothing was sent. Not the chain's refusal (`not-broadcast`); the same request may be
   * sent again.
   */
  | { readonly ok: false; readonly reason: "nonce-unavailable" }
  /**
   * The wallet's signer (decisions §27) could not be reached, timed out or refused: nothing was signed or sent and no
   * nonce was used; the same request succeeds once the signer is back (503 SIGNER_UNAVAILABLE).
   */
  | { readonly ok: false; readonly reason: "signer-unavailable" }
  /**
   * Once the wallet's lock was held, the request's {@link SubmitOptions.stillValid} said no (its signed deadline came
   * too close while it waited behind the wallet's other sends): nothing was signed or sent and no nonce was used.
   */
  | { readonly ok: false; readonly reason: "expired" }
  /** Mined, and reverted. */
  | { readonly ok: false; readonly reason: "reverted"; readonly txHash: HexString; readonly blockNumber: bigint }
  /** It may have reached the chain (the node could not be asked, or the receipt did not come in time). */
  | { readonly ok: false; readonly reason: "unknown-outcome"; readonly txHash: HexString };

/**
 * The outcome of sending several delegated attestations in one `multiAttestByDelegation` transaction (decisions §23):
 * as {@link Submission}, with the uids of the receipt's `Attested` logs in the order of the calls.
 */
export type BatchSubmission =
  | {
    readonly ok: true;
    readonly txHash: HexString;
    readonly blockNumber: bigint;
    readonly uids: readonly HexString[];
  }
  | Exclude<Submission, { readonly ok: true }>;

/**
 * A transaction the service signed, stored before it is sent: its hash to look it up, its raw bytes to
 * send it again unchanged (same nonce, same hash), and the wallet nonce it spends.
 */
export type SignedTx = {
  readonly txHash: HexString;
  readonly raw: HexString;
  /** The sending wallet, lowercase. */
  readonly wallet: HexString;
  readonly nonce: number;
};

/** Options of {@link DelegateSubmitter.submit}. */
export type SubmitOptions = {
  readonly gas: bigint;
  /** Called with the signed transaction before it is sent, so it is stored first; if it throws, nothing is sent. */
  readonly onSigned: (tx: SignedTx) => Promise<void>;
  /**
   * Called once the transaction may have reached the node while its outcome is still open (accepted, or the node's
   * answer was lost); not when the send was answered with its receipt, whose outcome the caller records next. A record
   * left "signed" is settled exactly like a "sent" one (decisions §15), so skipping it loses nothing.
   */
  readonly onSent: (txHash: HexString) => Promise<void>;
  /**
   * Asked once the wallet's lock is held, just before signing: false sends nothing (`expired`). The delegated writes
   * pass whether every signed deadline is still beyond the margin (decisions §6): a request that waited behind the
   * wallet's other sends (a slow node) was signed and sent after its deadline and reverted at the delegate's cost.
   * Called on the send's path, so it must be cheap and read nothing (a comparison with the clock). Absent: always sent.
   */
  readonly stillValid?: (() => boolean) | undefined;
};

/** Whether a wallet can pay for one more transaction, read before anything is recorded. */
export type FundsCheck = "ok" | "low" | "rpc-error";

/** The service's delegate wallet: simulates and submits `attestByDelegation`, paying gas. */
export interface DelegateSubmitter {
  readonly address: HexString;
  /** Compares the wallet's balance with the cost of a typical transaction at current fees. */
  readonly checkFunds: () => Promise<FundsCheck>;
  /**
   * `maxGas`: the most the estimate may search up to (the node runs the call with no more), so code the request names
   * (a contract attester's `isValidSignature`) burns at most that much of the node; past it `too-much-gas`.
   */
  readonly simulate: (call: DelegatedAttestCall, options?: { readonly maxGas?: bigint | undefined }) => Promise<Simulation>;
  readonly submit: (call: DelegatedAttestCall, options: SubmitOptions) => Promise<Submission>;
  /**
   * Simulates and sends several delegated attestations in one EAS `multiAttestByDelegation` transaction, in the order
   * given (EAS checks each signature against the attester's nonce as it increments within the call). Absent: this
   * deployment sends no batches.
   */
  readonly simulateBatch?: ((calls: readonly DelegatedAttestCall[], options?: { readonly maxGas?: bigint | undefined }) => Promise<Simulation>) | undefined;
  readonly submitBatch?: ((calls: readonly DelegatedAttestCall[], options: SubmitOptions) => Promise<BatchSubmission>) | undefined;
  /**
   * Deploys a counterfactual wallet through its ERC-6492 factory call before its first attestation (EAS checks
   * a contract attester's signature with the code at its address). `charge` runs with the estimated gas before
   * anything is sent; a refusal there sends nothing. "deployed" once the attester has code. `stillValid` is asked
   * once the wallet's lock is held, just before signing, as {@link SubmitOptions.stillValid} is: false sends nothing
   * ("expired").
   */
  readonly deployWallet?: (
    attester: HexString,
    deployment: WalletDeployment,
    charge: (gas: bigint) => Promise<boolean>,
    options?: { readonly stillValid?: (() => boolean) | undefined },
  ) => Promise<WalletDeploymentOutcome>;
}

/**
 * What deploying a counterfactual wallet came to: "failed" when nothing was sent (the factory call reverts in
 * estimation, before its charge; or, charged, the node refused the transaction), "nonce-unavailable" when the
 * delegate wallet's nonce, shared by the service's instances under a lock in the storage, could not be taken (nothing
 * sent; not the chain's refusal), "signer-unavailable" when the delegate's signer gave no signature
 * (nothing sent), "expired" when the request's `stillValid` said no under the wallet's lock (nothing signed or sent),
 * "chain-silent" when a read the factory call needed before signing failed (the delegate's nonce or fees: nothing
 * signed or sent), "rpc-error" when the chain did not answer otherwise (before the charge, or with the call's outcome
 * unknown), {@link FactoryCallBurned} when it was sent and mined and the attester still has no code.
 */
export type WalletDeploymentOutcome =
  | "deployed"
  | "refused"
  | "failed"
  | "nonce-unavailable"
  | "rpc-error"
  | "chain-silent"
  | "signer-unavailable"
  | "expired"
  | FactoryCallBurned;

/** The factory call was mined (or reverted) without deploying the wallet: its gas is spent. */
export type FactoryCallBurned = {
  readonly burned: true;
  readonly txHash: HexString;
  readonly blockNumber: bigint;
  /** From the receipt; null when the node did not say. */
  readonly gasUsed: bigint | null;
};
