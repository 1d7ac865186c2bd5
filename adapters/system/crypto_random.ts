import type { Random } from "../../ports/random.ts";

/** Random bytes from the platform's CSPRNG. */
export const cryptoRandom: Random = {
  bytes: (length) => crypto.getRandomValues(new Uint8Array(length)),
};
