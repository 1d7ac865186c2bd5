/** The chains a deployment serves (decisions §30): the served set, the `chain` parameter, answers' `chain`, the write rule. */
export {
  buildServedChains,
  caip2Of,
  type ChainEntry,
  type ChainRole,
  readChainIds,
  type ServedChain,
  servedChain,
  type ServedChains,
  singleChain,
} from "./served_chains.ts";
export { type ChainAnswer, chainAnswer, namedChain, parseChainParam, resolveChain, type ResolveChainCode } from "./chain_param.ts";
export { chainForTypedData, type TypedDataChainDomain } from "./write_chain.ts";
