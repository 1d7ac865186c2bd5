/** The x402 facilitator as the service under test reaches it, and the settings that point the service there. */
import type { Hex } from "viem";

/**
 * Starts a loopback proxy in front of the facilitator at `facilitatorUrl`. Each request's path and body (a POST's) go
 * to `before` first, which may hold, count or race the call, or answer in the facilitator's place with a response.
 */
export function startFacilitatorProxy(
  facilitatorUrl: string,
  before: (path: string, body: string | undefined) => Promise<Response | void>,
): ReturnType<typeof Bun.serve> {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const path = new URL(request.url).pathname;
      const body = request.method === "POST" ? await request.text() : undefined;
      const answer = await before(path, body);
      if (answer !== undefined) return answer;
      return await fetch(`${facilitatorUrl}${path}`, { method: request.method, headers: { "content-type": "application/json" }, body });
    },
  });
}

/** The service's x402 settings for the devnet's token and payee, its facilitator reached through `proxy`; prices aside. */
export function x402Settings(
  proxy: { readonly port?: number | undefined },
  x402: { readonly token: Hex; readonly name: string; readonly version: string; readonly payTo: Hex },
): Record<string, string> {
  return {
    X402_FACILITATOR_URL: `http://127.0.0.1:${proxy.port}`,
    X402_ASSET: x402.token,
    X402_ASSET_NAME: x402.name,
    X402_ASSET_VERSION: x402.version,
    X402_PAY_TO: x402.payTo,
  };
}
