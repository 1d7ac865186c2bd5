import type { FundsCheck, HexString, Simulation, Submission, SubmitOptions } from "../eas.ts";
import { fakeSignedTx } from "./_signed_tx.ts";

/** A witness wallet that records its calls; its answers are settable. */
export function fakeWitnessWriter(options: { simulation?: Simulation; submission?: Submission; funds?: FundsCheck } = {}) {
  type Call = import("../witness.ts").WitnessAttestCall;
  let counter = 0;
  const writer = {
    address: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC" as HexString,
    simulated: [] as Call[],
    sent: [] as Call[],
    funds: options.funds ?? ("ok" as FundsCheck),
    simulation: options.simulation ?? { ok: true as const, gas: 150_000n } as Simulation,
    submission: options.submission,
    /** Runs between signing and the answer, e.g. to look at the ledger mid-flight. */
    duringSend: async (_txHash: HexString) => {},
    checkFunds: () => Promise.resolve(writer.funds),
    simulate(call: Call) {
      writer.simulated.push(call);
      return Promise.resolve(writer.simulation);
    },
    async submit(call: Call, opts: SubmitOptions): Promise<Submission> {
      // The wallet's nonce or fees not read, or its shared nonce not taken: nothing signed or sent, as the real sender.
      if (writer.submission?.ok === false && (writer.submission.reason === "rpc-error" || writer.submission.reason === "nonce-unavailable")) return writer.submission;
      counter++;
      const tx = fakeSignedTx(writer.address, counter, "c");
      try {
        await opts.onSigned(tx);
      } catch {
        return { ok: false, reason: "not-broadcast" };
      }
      if (writer.submission?.ok === false && writer.submission.reason === "not-broadcast") return writer.submission;
      await opts.onSent(tx.txHash);
      writer.sent.push(call);
      await writer.duringSend(tx.txHash);
      if (writer.submission) return writer.submission;
      return { ok: true, txHash: tx.txHash, blockNumber: BigInt(100 + counter), uid: `0x${counter.toString(16).padStart(64, "d")}` as HexString };
    },
  };
  return writer satisfies import("../witness.ts").WitnessWriter;
}
