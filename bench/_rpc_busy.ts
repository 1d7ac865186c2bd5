/**
 * Time during which at least one of the service's JSON-RPC calls is in flight, to split a request's server time
 * from the chain's: wrap the service's RPC fetch with `wrap`, read `ms()` before and after a request.
 */
export function rpcBusyClock() {
  let busyMs = 0;
  let inFlight = 0;
  let since = 0;
  return {
    wrap: (inner: typeof fetch): typeof fetch =>
      (async (input: RequestInfo | URL, init?: RequestInit) => {
        if (inFlight++ === 0) since = performance.now();
        try {
          return await inner(input, init);
        } finally {
          if (--inFlight === 0) busyMs += performance.now() - since;
        }
      }) as typeof fetch,
    /** Busy milliseconds so far. */
    ms: () => busyMs,
    reset: () => void (busyMs = 0),
  };
}
