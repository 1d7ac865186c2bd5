/** Client-private: the fields of EIP-712's `EIP712Domain`, shared by the wallet helper and the signing bridge. */

/** The fields of EIP-712's `EIP712Domain`, in the standard's order (a domain lists those it has). */
export const DOMAIN_FIELDS = [
  { name: "name", type: "string" },
  { name: "version", type: "string" },
  { name: "chainId", type: "uint256" },
  { name: "verifyingContract", type: "address" },
  { name: "salt", type: "bytes32" },
] as const;
