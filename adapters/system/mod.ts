/** The system clock and the system's randomness. */
export { cryptoRandom } from "./crypto_random.ts";
export * from "./system_clock.ts";
