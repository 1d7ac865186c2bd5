/** A local Anvil chain with the EAS contracts deployed (the devnet), its facilitator and `ats devnet`. */
import { type Anvil, type AnvilOptions, anvilBinary, startAnvil } from "./_anvil.ts";

export type { Anvil, AnvilOptions };
/** One bare Anvil (no contracts): a proof chain for tests (decisions §30). */
export { startAnvil };
/** The npm package's Anvil binary for this platform (what `bun run build` embeds). */
export { anvilBinary };
export {
  ANVIL_DEV_ADDRESSES,
  ANVIL_DEV_KEYS,
  type Devnet,
  DEVNET_CHAIN_NAME,
  DEVNET_SECOND_CHAIN_ID,
  DEVNET_SECOND_CHAIN_NAME,
  type DevnetChain,
  type DevnetOptions,
  readDevnetChains,
  startDevnet,
} from "./devnet.ts";
export { type Facilitator, type FacilitatorOptions, startFacilitator } from "./facilitator.ts";
export { TEST_USD, TEST_USD_MINT } from "./_token.ts";
export { runDevnetCommand } from "./command.ts";
export type { AnvilLock } from "./_lock.ts";
