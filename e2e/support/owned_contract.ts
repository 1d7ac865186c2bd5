/** A minimal Ownable contract for ownership proofs, compiled at test time with the npm solc (offline). */
import type { Hex } from "viem";

const SOURCE = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.0;
contract Owned {
  address public owner;
  event OwnershipTransferred(address indexed previousOwner, address indexed newOwner);
  constructor() { owner = msg.sender; emit OwnershipTransferred(address(0), msg.sender); }
  function transferOwnership(address to) external {
    require(msg.sender == owner, "not the owner");
    emit OwnershipTransferred(owner, to);
    owner = to;
  }
}`;

let compiled: { abi: unknown[]; bytecode: Hex } | undefined;

/** The ABI and creation bytecode of `Owned` (compiled once per process). */
export async function ownedContract(): Promise<{ abi: unknown[]; bytecode: Hex }> {
  if (compiled !== undefined) return compiled;
  // solc ships no types; only its compile function is used.
  const moduleName = "solc";
  const solc = ((await import(moduleName)) as { default: { compile: (input: string) => string } }).default;
  const output = JSON.parse(solc.compile(JSON.stringify({
    language: "Solidity",
    sources: { "Owned.sol": { content: SOURCE } },
    settings: { evmVersion: "paris", outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } } },
  }))) as { contracts: Record<string, Record<string, { abi: unknown[]; evm: { bytecode: { object: string } } }>>; errors?: { severity: string; message: string }[] };
  const errors = (output.errors ?? []).filter((e) => e.severity === "error");
  if (errors.length > 0) throw new Error(errors.map((e) => e.message).join("; "));
  const contract = output.contracts["Owned.sol"]!.Owned!;
  compiled = { abi: contract.abi, bytecode: `0x${contract.evm.bytecode.object}` as Hex };
  return compiled;
}
