import { isAddress } from "viem/utils";
import type { EasReader, HexString } from "../../ports/eas.ts";
import { fail, ok, type Result } from "../result.ts";

/** Reads an attester's EAS nonce. */
export type ReadNonce = (attester: unknown) => Promise<Result<bigint, "INVALID_INPUT" | "RPC_ERROR">>;

/** Builds the nonce use case. */
export function createReadNonce(eas: EasReader): ReadNonce {
  return async function readNonce(attester) {
    if (typeof attester !== "string" || attester === "") {
      return fail("INVALID_INPUT", "Missing required parameter: attester");
    }
    if (!isAddress(attester)) return fail("INVALID_INPUT", "Invalid attester address format");
    const read = await eas.getAttesterNonce(attester as HexString);
    if (!read.ok) return fail("RPC_ERROR", "Failed to fetch nonce from RPC");
    return ok(read.nonce);
  };
}
