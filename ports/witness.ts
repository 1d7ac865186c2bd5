import type { AttestationRequestData, FundsCheck, HexString, Simulation, Submission, SubmitOptions } from "./eas.ts";

/** The arguments of a plain EAS `attest` from the service's own wallet. */
export type WitnessAttestCall = { readonly schema: HexString; readonly data: AttestationRequestData };

/** The service's witness wallet: simulates and submits `attest`, as attester, paying gas. */
export interface WitnessWriter {
  readonly address: HexString;
  readonly checkFunds: () => Promise<FundsCheck>;
  readonly simulate: (call: WitnessAttestCall) => Promise<Simulation>;
  readonly submit: (call: WitnessAttestCall, options: SubmitOptions) => Promise<Submission>;
}

export type { TxStatus, TxStatusReader } from "./submissions.ts";
