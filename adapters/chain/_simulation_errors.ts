/** What a failed simulation (a gas estimate) was: a revert named by EAS's errors, missing funds, or an RPC failure. */
import { BaseError, ContractFunctionRevertedError, type Hex, InsufficientFundsError, keccak256 } from "viem";
import type { Simulation } from "../../ports/eas.ts";
import { EAS_ABI } from "../../domain/eas_abi.ts";
import { NodeRpcError } from "./json_rpc.ts";
import { describe } from "./viem_tx_sender.ts";

/** viem's reading of a node message saying the sender cannot pay (InsufficientFundsError.nodeMessage). */
const INSUFFICIENT_FUNDS = /insufficient funds|exceeds transaction sender account balance/i;
/**
 * A node saying no gas limit up to its cap fits the transaction: geth's `gas required exceeds allowance (30000000)`,
 * Anvil's `Out of gas: gas required exceeds allowance: 30000000`. It was an RPC error, so a batch too large for one
 * block answered every item 500 RPC_ERROR, a dependency failure inviting the same request again.
 */
const TOO_MUCH_GAS = /gas required exceeds allowance/i;

/**
 * {@link classifySimulationError} for the lean client's errors: the node's answer names a revert (its data decoded
 * with EAS's errors) or missing funds; a failed exchange is an RPC error.
 */
export function classifyNodeSimulationError(error: unknown, log: (event: string, fields: Record<string, unknown>) => void): Simulation {
  if (error instanceof NodeRpcError) {
    if (INSUFFICIENT_FUNDS.test(error.message)) return { ok: false, reason: "insufficient-funds" };
    if (TOO_MUCH_GAS.test(error.message)) return { ok: false, reason: "too-much-gas" };
    const data = error.data;
    const revertData = typeof data === "string" ? data : typeof data === "object" && data !== null ? (data as { data?: unknown }).data : undefined;
    if (typeof revertData === "string" && /^0x[0-9a-fA-F]{8}/.test(revertData)) {
      return { ok: false, reason: "reverted", errorName: decodeEasError(revertData as Hex) };
    }
    if (/execution reverted|revert/i.test(error.message)) return { ok: false, reason: "reverted", errorName: "reverted" };
  }
  log("rpc_error", { op: "estimateGas", error: describe(error) });
  return { ok: false, reason: "rpc-error" };
}

/** Maps a failed gas estimate to a simulation outcome (revert name, no funds, RPC failure). */
export function classifySimulationError(
  error: unknown,
  log: (event: string, fields: Record<string, unknown>) => void,
): Simulation {
  if (error instanceof BaseError) {
    if (error.walk((e) => e instanceof InsufficientFundsError)) return { ok: false, reason: "insufficient-funds" };
    const revertData = findRevertData(error);
    if (revertData !== undefined) {
      const name = decodeEasError(revertData);
      return { ok: false, reason: "reverted", errorName: name };
    }
    const reverted = error.walk((e) => e instanceof ContractFunctionRevertedError);
    if (reverted instanceof ContractFunctionRevertedError) {
      return { ok: false, reason: "reverted", errorName: reverted.data?.errorName ?? "reverted" };
    }
    if (/execution reverted|revert/i.test(error.details ?? "")) {
      return { ok: false, reason: "reverted", errorName: "reverted" };
    }
    if (TOO_MUCH_GAS.test(`${error.details ?? ""} ${error.message}`)) return { ok: false, reason: "too-much-gas" };
  }
  log("rpc_error", { op: "estimateGas", error: describe(error) });
  return { ok: false, reason: "rpc-error" };
}

function findRevertData(error: BaseError): Hex | undefined {
  let found: Hex | undefined;
  error.walk((e) => {
    const data = (e as { data?: unknown }).data;
    if (typeof data === "string" && /^0x[0-9a-fA-F]{8}/.test(data)) found = data as Hex;
    else if (typeof data === "object" && data !== null && typeof (data as { data?: unknown }).data === "string") {
      found = (data as { data: Hex }).data;
    }
    return false;
  });
  return found;
}

const EAS_ERROR_SELECTORS = new Map<string, string>();

function decodeEasError(data: Hex): string {
  if (EAS_ERROR_SELECTORS.size === 0) {
    for (const item of EAS_ABI) {
      if (item.type === "error") {
        EAS_ERROR_SELECTORS.set(keccak256(new TextEncoder().encode(`${item.name}()`)).slice(0, 10), item.name);
      }
    }
  }
  return EAS_ERROR_SELECTORS.get(data.slice(0, 10).toLowerCase()) ?? "reverted";
}
