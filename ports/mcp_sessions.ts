/**
 * The MCP sessions of the deployment (decisions §20, §21): records in the storage, so that any instance answers any
 * `/mcp` request. A record is an id and when it was last used; the protocol state around it is rebuilt per request.
 */

/** How many sessions are kept and for how long unused. */
export type McpSessionBounds = {
  /** Sessions kept at once (`MCP_MAX_SESSIONS`); past it the least recently used goes. */
  readonly maxSessions: number;
  /** A session unused this long is gone (`MCP_SESSION_IDLE_SECONDS`, in ms). */
  readonly idleMs: number;
};

/** What opening a session pushed out, by reason. */
export type McpSessionsDropped = { readonly idle: number; readonly full: number };

/** The session records. */
export interface McpSessionStore {
  /**
   * Records a new session, used at `nowMs`: first drops the sessions idle past `idleMs`, then, while `maxSessions`
   * are kept, the least recently used (exact across instances).
   */
  readonly open: (id: string, options: McpSessionBounds & { readonly nowMs: number }) => Promise<McpSessionsDropped>;
  /** Marks a live session used at `nowMs`; false (nothing changed) when unknown, closed, or idle past `idleMs`. */
  readonly touch: (id: string, options: { readonly nowMs: number; readonly idleMs: number }) => Promise<boolean>;
  /** Ends a session (its client's DELETE); false when there was none. */
  readonly close: (id: string) => Promise<boolean>;
  /** Drops the sessions idle past `idleMs`; how many went. */
  readonly sweep: (options: { readonly nowMs: number; readonly idleMs: number }) => Promise<number>;
  /** Sessions live at `nowMs`. */
  readonly count: (options: { readonly nowMs: number; readonly idleMs: number }) => Promise<number>;
}
