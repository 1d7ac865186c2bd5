import type { AttestationRequestData, HexString, Simulation, Submission, SubmitOptions } from "./eas.ts";

/** The arguments of a plain EAS `attest` from the service's own wallet. */
export type WitnessAttestCall = { readonly schema: HexString; readonly data: AttestationRequestData };

/** The service's witness wallet: simulates and submits `attest`, as attester, paying gas. */
export interface WitnessWriter {
  readonly address: HexString;
  readonly simulate: (call: WitnessAttestCall) => Promise<Simulation>;
  readonly submit: (call: WitnessAttestCall, options: SubmitOptions) => Promise<Submission>;
}

/** What the chain says about a transaction hash. */
export type TxStatus =
  | { readonly status: "success"; readonly blockNumber: bigint; readonly uid: HexString | null }
  | { readonly status: "reverted"; readonly blockNumber: bigint }
  /** No receipt, but the node holds the transaction and its nonce is still free: it may yet be mined. */
  | { readonly status: "pending" }
  /** No receipt, and the sender's mined nonce has moved past the transaction's nonce: it can never be mined. */
  | { readonly status: "replaced" }
  /** The node knows nothing of the hash: never broadcast, or dropped from its pool. */
  | { readonly status: "not-found" }
  | { readonly status: "rpc-error" };

/** Reads the receipt of a transaction the service signed earlier. */
export interface TxStatusReader {
  readonly status: (txHash: HexString) => Promise<TxStatus>;
}
