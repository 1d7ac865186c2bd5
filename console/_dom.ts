/** The console's small DOM helpers (text only, never markup), the page's settings and the status lines every panel uses. */
import { AtsClientError, normalizeDid, type ServiceOptions } from "../client/mod.ts";

export type Child = Node | string | number | null | undefined | false;

/** Builds an element; strings become text nodes, never markup. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | undefined> = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) if (value !== undefined) element.setAttribute(name, value);
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : child);
  }
  return element;
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const element = document.getElementById(id);
  if (element === null) throw new Error(`Missing #${id}`);
  return element as T;
}

const meta = (name: string) => document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content ?? "";
export const CHAIN_ID = Number(meta("ats-chain-id"));
export const api: ServiceOptions = { baseUrl: "" };

export type StatusKind = "progress" | "ok" | "warn" | "error" | "";

export function setStatus(id: string, kind: StatusKind, text: string): void {
  const element = byId(id);
  element.className = `status ${kind}`;
  element.textContent = text;
}

/** A sentence for any failure: the service's code and message (and details), or the wallet's. */
export function describeError(error: unknown): string {
  if (error instanceof AtsClientError) {
    // The service's bare word for a session it does not know: say what happened and what to do.
    if (error.code === "UNAUTHENTICATED" && error.message === "Unauthenticated") {
      return "UNAUTHENTICATED: your session has ended (signed out, expired or its cookie cleared): sign in again with your wallet";
    }
    // The client's own words for a service it could not reach name the request's encoded address: say what it means.
    if (error.code === "NETWORK_ERROR" && error.status === undefined) {
      return "NETWORK_ERROR: the service could not be reached (stopped, or you are offline); try again";
    }
    const details = (error.body as { details?: unknown } | undefined)?.details;
    return `${error.code}: ${error.message}${typeof details === "string" && details !== "" ? ` (${details})` : ""}`;
  }
  return `UNEXPECTED: ${error instanceof Error ? error.message : String(error)}`;
}

/** A finished step that still needs the reader's attention (a lookup failed), shown as a warning, not a success. */
export type Warning = { readonly warn: string };

/**
 * What a finished write says once the page is brought up to date: `done`, or, when refreshing failed, `done` as a
 * warning that the page is behind. A write that went through must never read as failed: a person sends it again, and a
 * sponsored write is spent twice.
 */
export async function writtenThenRefreshed(done: string, refresh: () => Promise<void>): Promise<string | Warning> {
  try {
    await refresh();
    return done;
  } catch {
    return { warn: `${done}. This page could not be brought up to date: reload it to see the change.` };
  }
}

/** What the page does when the service says the session has ended (set by the Account panel). */
let sessionEnded: ((error: unknown) => void) | undefined;

/** Sets what the page does when an action's answer is 401 `UNAUTHENTICATED`: the session it showed is gone. */
export function whenSessionEnds(handler: (error: unknown) => void): void {
  sessionEnded = handler;
}

/** Runs a form's work with its submit button disabled and the status line kept up to date. */
export async function busy(form: HTMLFormElement | null, statusId: string, progress: string, work: () => Promise<string | Warning | void>): Promise<void> {
  const buttons = form ? Array.from(form.querySelectorAll("button")) : [];
  for (const button of buttons) button.disabled = true;
  setStatus(statusId, "progress", progress);
  try {
    const done = await work();
    if (typeof done === "object") setStatus(statusId, "warn", done.warn);
    else setStatus(statusId, done ? "ok" : "", done ?? "");
  } catch (error) {
    setStatus(statusId, "error", describeError(error));
    // The service's own 401 (not the page's "Sign in with a wallet first", which has no status).
    if (error instanceof AtsClientError && error.code === "UNAUTHENTICATED" && error.status === 401) sessionEnded?.(error);
  } finally {
    for (const button of buttons) button.disabled = false;
  }
}

export function copyButton(text: string, what: string): HTMLButtonElement {
  const button = h("button", { type: "button", class: "secondary", "aria-label": `Copy ${what}` }, "Copy");
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(text);
      button.textContent = "Copied";
    } catch {
      button.textContent = "Select and copy by hand";
    }
    setTimeout(() => (button.textContent = "Copy"), 2000);
  });
  return button;
}

export const seconds = (value: unknown) => {
  const n = Number(value);
  return Number.isFinite(n) && n > 0 ? new Date(n * 1000).toISOString().replace(".000Z", "Z") : "—";
};

/** What a person typed or pasted as a site: its domain when it is an address (https://shop.example/about), trimmed. */
export function siteOf(input: string): string {
  const trimmed = input.trim();
  const site = /^https?:\/\/([^/?#:@\s]+)(?:[/?#].*)?$/i.exec(trimmed);
  return site === null ? trimmed : site[1]!;
}

/** A subject typed by a person: a domain (or a pasted address of the site) becomes its did:web. */
export function subjectDidOf(input: string): string {
  const given = siteOf(input);
  const normalized = normalizeDid(given);
  return normalized.ok ? normalized.value : given;
}
