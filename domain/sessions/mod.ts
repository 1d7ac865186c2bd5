/** Sign-in with Ethereum and sessions (decisions §8, §12, §15). */
export { clientKeyOf, createSessions, networkKeyOf, type Sessions } from "./sessions.ts";
export { parseSiweMessage } from "./siwe.ts";
