/**
 * `ats healthcheck`: the container image's HEALTHCHECK (decisions §28). Asks the service in the same container
 * whether it is ready (`GET /readyz` on loopback, the port from `PORT`, default 8080) and answers with an exit
 * code: 0 ready, 1 anything else (not listening, 503, no answer within the timeout). It reads nothing else of the
 * configuration, so a setting the service itself refuses cannot make the check fail differently.
 */

/** What the check needs: the environment's `PORT`, an optional URL, `fetch` and where to say why it failed. */
export type HealthcheckOptions = {
  readonly env: Readonly<Record<string, string | undefined>>;
  /** `ats healthcheck <url>`: another URL to ask (an http(s) URL); default the local `/readyz`. */
  readonly url?: string | undefined;
  readonly fetchFn?: typeof fetch;
  readonly timeoutMs?: number;
  readonly report?: (line: string) => void;
};

/** The URL the check asks: the argument, or `/readyz` on loopback at `PORT` (8080 when unset or 0). */
export function healthcheckUrl(env: HealthcheckOptions["env"], url?: string): string | undefined {
  if (url !== undefined) return /^https?:\/\/\S+$/.test(url) ? url : undefined;
  const raw = env.PORT?.trim();
  if (raw === undefined || raw === "" || raw === "0") return "http://127.0.0.1:8080/readyz";
  if (!/^[0-9]+$/.test(raw) || Number(raw) > 65_535) return undefined;
  return `http://127.0.0.1:${Number(raw)}/readyz`;
}

/** Runs the check once; resolves to the process's exit code (0 ready, 1 not). */
export async function runHealthcheck(options: HealthcheckOptions): Promise<0 | 1> {
  const report = options.report ?? ((line: string) => console.error(line));
  const url = healthcheckUrl(options.env, options.url);
  if (url === undefined) {
    report(options.url !== undefined ? "healthcheck: expected an http(s) URL" : "healthcheck: PORT is not a port number");
    return 1;
  }
  try {
    const response = await (options.fetchFn ?? fetch)(url, {
      signal: AbortSignal.timeout(options.timeoutMs ?? 4_000),
      headers: { "user-agent": "ats-healthcheck" },
    });
    await response.arrayBuffer();
    if (response.status >= 200 && response.status < 300) return 0;
    report(`healthcheck: ${url} answered ${response.status}`);
    return 1;
  } catch (error) {
    report(`healthcheck: ${url} did not answer (${error instanceof Error ? error.name : "error"})`);
    return 1;
  }
}
