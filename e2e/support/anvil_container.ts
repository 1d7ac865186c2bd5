/**
 * Anvil in a container through testcontainers, for `ANVIL_RUNTIME=container`. testcontainers is imported only
 * when a container is asked for, so the default (local process) runs never load it.
 */
import type { Anvil, AnvilOptions } from "../../adapters/devnet/mod.ts";

/** The image `ANVIL_IMAGE` defaults to. */
export const DEFAULT_ANVIL_IMAGE = "ghcr.io/foundry-rs/foundry:latest";

/** Whether a container runtime answers, and if not why. */
export type ContainerRuntimeStatus = { available: true; host: string } | { available: false; reason: string };

const ANVIL_PORT = 8545;
const PROBE_TIMEOUT_MS = 5_000;

let probed: Promise<ContainerRuntimeStatus> | undefined;

/** Asks testcontainers for a container runtime (Docker, Podman, ...), giving up after five seconds; asked once per process. */
export function probeContainerRuntime(): Promise<ContainerRuntimeStatus> {
  probed ??= (async (): Promise<ContainerRuntimeStatus> => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<ContainerRuntimeStatus>((resolve) => {
      timer = setTimeout(() => resolve({ available: false, reason: `no answer within ${PROBE_TIMEOUT_MS / 1000} s` }), PROBE_TIMEOUT_MS);
    });
    const probe = (async (): Promise<ContainerRuntimeStatus> => {
      try {
        const { getContainerRuntimeClient } = await import("testcontainers");
        const client = await getContainerRuntimeClient();
        return { available: true, host: client.info.containerRuntime.host };
      } catch (error) {
        return { available: false, reason: error instanceof Error ? error.message : String(error) };
      }
    })();
    try {
      return await Promise.race([probe, timeout]);
    } finally {
      clearTimeout(timer);
    }
  })();
  return probed;
}

/** A `startAnvil` for `startDevnet` that runs `anvil --host 0.0.0.0` in `image` and talks to its mapped port. */
export function containerAnvil(image: string): (options: AnvilOptions) => Promise<Anvil> {
  return async function startContainerAnvil(options) {
    if (options.stateFile !== undefined) throw new Error("Anvil in a container keeps no state file: start the devnet with persist: false");
    const { GenericContainer, Wait } = await import("testcontainers");
    options.log(`starting anvil in a container from ${image}`);
    // The entrypoint is set because the foundry image's own is `sh -c`; any image with anvil on PATH works.
    const container = await new GenericContainer(image)
      .withEntrypoint(["anvil"])
      .withCommand(["--host", "0.0.0.0", "--port", String(ANVIL_PORT), "--chain-id", String(options.chainId)])
      .withExposedPorts(ANVIL_PORT)
      .withWaitStrategy(Wait.forLogMessage(/Listening on 0\.0\.0\.0:8545/))
      .withStartupTimeout(options.startTimeoutMs ?? 120_000)
      .start();
    let stopping: Promise<void> | undefined;
    // No grace period (testcontainers' default, stated so it stays): Anvil keeps nothing to save, and the chain-down
    // tests stop it inside a test's time limit.
    const stop = (): Promise<void> => {
      stopping ??= container.stop({ timeout: 0 }).then(() => undefined);
      return stopping;
    };
    const rpcUrl = `http://${container.getHost()}:${container.getMappedPort(ANVIL_PORT)}`;
    try {
      await waitForChainId(rpcUrl, options.chainId, options.startTimeoutMs ?? 30_000);
    } catch (error) {
      await stop();
      throw error;
    }
    options.log(`anvil container answers at ${rpcUrl}`);
    return { rpcUrl, stop };
  };
}

// The log line comes from inside the container; the published port may take a moment longer to forward.
async function waitForChainId(rpcUrl: string, chainId: number, timeoutMs: number): Promise<void> {
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] });
  const deadline = Date.now() + timeoutMs;
  let last = "no answer";
  while (Date.now() < deadline) {
    try {
      const response = await fetch(rpcUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
        signal: AbortSignal.timeout(2_000),
      });
      const json = (await response.json()) as { result?: string };
      if (json.result !== undefined) {
        if (Number(json.result) !== chainId) throw new Error(`Anvil container reports chain ${Number(json.result)}, expected ${chainId}`);
        return;
      }
      last = JSON.stringify(json);
    } catch (error) {
      if (error instanceof Error && error.message.startsWith("Anvil container reports")) throw error;
      last = error instanceof Error ? error.message : String(error);
    }
    await Bun.sleep(100);
  }
  throw new Error(`Anvil container at ${rpcUrl} did not answer eth_chainId within ${timeoutMs} ms (${last})`);
}
