/**
 * Secrets of one deployment, kept in its shared store (issue 43 item 10): made once, by whichever instance first
 * needs one, and read by every instance on the same database, so what one instance keys (a query cursor's check)
 * another accepts. Never shown to anyone, never logged.
 */
export interface DeploymentSecrets {
  /**
   * The secret named `name`: the one stored, or `candidate` (fresh random bytes from the caller) stored now when
   * there is none. When instances race, the first stored wins and every one of them gets that one.
   */
  readonly secret: (name: string, candidate: Uint8Array) => Promise<Uint8Array>;
}
