import type { Clock } from "../clock.ts";
import { MAX_EVICTIONS_PER_REGISTRATION, UNUSED_CLIENT_GRACE_MS } from "../oauth.ts";

/** An OAuth store in memory (decisions §19); `writes` counts every change, so a test can show nothing was written. */
export function fakeOAuthStore() {
  const clients = new Map<string, import("../oauth.ts").OAuthClient & { registeredBy: string | null; registeredNetwork?: string | null; grantedAtMs: number | null; evictedAtMs: number | null }>();
  const codes = new Map<string, import("../oauth.ts").StoredCode>();
  const grants = new Map<string, import("../oauth.ts").Grant>();
  const refresh = new Map<string, import("../oauth.ts").RefreshToken>();
  const revoked = new Set<string>();
  const keys: import("../oauth.ts").StoredSigningKey[] = [];
  const signerKeys = new Map<string, import("../oauth.ts").SignerPublicKey>();
  const revokedKeys = new Map<string, number>();
  /** A key as read: with its revocation, if any (as the SQL stores' join gives it). */
  const withRevocation = <K extends { readonly kid: string }>(key: K): K => {
    const revokedAtMs = revokedKeys.get(key.kid);
    return revokedAtMs === undefined ? key : { ...key, revokedAtMs };
  };
  const store = {
    writes: 0,
    clients,
    grants,
    codes,
    registerClient(client, limits, nowMs) {
      const since = nowMs - limits.windowMs;
      const refused = (limit: "client" | "network", rows: { createdAtMs: number }[]) =>
        Promise.resolve({ ok: false as const, limit, retryAfterMs: Math.min(...rows.map((c) => c.createdAtMs)) + limits.windowMs - nowMs });
      const mine = [...clients.values()].filter((c) => c.registeredBy === limits.client && c.createdAtMs > since);
      if (mine.length >= limits.perClient) return refused("client", mine);
      const network = limits.network ?? null;
      if (network !== null) {
        const ours = [...clients.values()].filter((c) => c.registeredNetwork === network.key && c.createdAtMs > since);
        if (ours.length >= network.max) return refused("network", ours);
      }
      const unused = [...clients.values()]
        .filter((c) => c.accountId === null && c.grantedAtMs === null && c.evictedAtMs === null && c.createdAtMs > since)
        .sort((a, b) => a.createdAtMs - b.createdAtMs || (a.clientId < b.clientId ? -1 : 1));
      const holdsLiveCode = (clientId: string) => [...codes.values()].some((k) => k.clientId === clientId && k.usedAtMs === null && k.expiresAtMs > nowMs);
      const evictable = unused.filter((c) => c.createdAtMs <= nowMs - UNUSED_CLIENT_GRACE_MS && !holdsLiveCode(c.clientId));
      const evict = evictable.slice(0, Math.min(MAX_EVICTIONS_PER_REGISTRATION, Math.max(0, unused.length - limits.total + 1)));
      for (const c of evict) {
        clients.set(c.clientId, { ...c, evictedAtMs: nowMs });
        for (const [hash, code] of codes) if (code.clientId === c.clientId && code.usedAtMs === null) codes.delete(hash);
      }
      store.writes++;
      clients.set(client.clientId, { ...client, registeredBy: limits.client, registeredNetwork: network?.key ?? null, grantedAtMs: null, evictedAtMs: null });
      return Promise.resolve({ ok: true as const, evicted: evict.length });
    },
    createClient(client, max) {
      if ([...clients.values()].filter((c) => c.accountId === client.accountId).length >= max) return Promise.resolve(false);
      store.writes++;
      clients.set(client.clientId, { ...client, registeredBy: client.accountId, grantedAtMs: null, evictedAtMs: null });
      return Promise.resolve(true);
    },
    findClient: (id) => Promise.resolve(clients.get(id)?.evictedAtMs === null ? clients.get(id) : undefined),
    listClients: (accountId) => Promise.resolve([...clients.values()].filter((c) => c.accountId === accountId)),
    deleteClient(accountId, clientId) {
      if (clients.get(clientId)?.accountId !== accountId) return Promise.resolve(false);
      store.writes++;
      clients.delete(clientId);
      for (const [id, g] of grants) if (g.clientId === clientId) grants.delete(id);
      return Promise.resolve(true);
    },
    saveCode(code, limits) {
      const live = () => [...codes.values()].filter((c) => c.usedAtMs === null && c.expiresAtMs > code.createdAtMs)
        .sort((a, b) => a.createdAtMs - b.createdAtMs || (a.codeHash < b.codeHash ? -1 : 1));
      let evicted = 0;
      const ofAccount = live().filter((c) => c.accountId === code.accountId);
      const accountOver = ofAccount.length - limits.perAccount + 1;
      if (accountOver > 0) {
        const order = [...ofAccount.filter((c) => c.clientId === code.clientId), ...ofAccount.filter((c) => c.clientId !== code.clientId)];
        for (const c of order.slice(0, accountOver)) codes.delete(c.codeHash);
        evicted += Math.min(accountOver, order.length);
      }
      for (let ofClient = live().filter((c) => c.clientId === code.clientId); ofClient.length >= limits.perClient; ofClient = live().filter((c) => c.clientId === code.clientId)) {
        const held = new Map<string, number>();
        for (const c of ofClient) held.set(c.accountId, (held.get(c.accountId) ?? 0) + 1);
        const most = Math.max(...held.values());
        codes.delete(ofClient.find((c) => held.get(c.accountId) === most)!.codeHash);
        evicted++;
      }
      store.writes++;
      codes.set(code.codeHash, { ...code, usedAtMs: null, grantId: null });
      return Promise.resolve({ evicted });
    },
    findCode: (hash) => Promise.resolve(codes.get(hash)),
    exchangeCode(hash, grant, token, nowMs, maxGrantsPerAccount) {
      const code = codes.get(hash);
      if (code === undefined || code.usedAtMs !== null) return Promise.resolve(false);
      store.writes++;
      codes.set(hash, { ...code, usedAtMs: nowMs, grantId: grant.id });
      grants.set(grant.id, grant);
      const owner = clients.get(grant.clientId);
      if (owner !== undefined && owner.grantedAtMs === null) clients.set(owner.clientId, { ...owner, grantedAtMs: nowMs });
      if (token !== null) refresh.set(token.tokenHash, token);
      const others = [...grants.values()]
        .filter((g) => g.accountId === grant.accountId && g.revokedAtMs === null && g.id !== grant.id)
        .sort((a, b) => b.createdAtMs - a.createdAtMs || (a.id < b.id ? 1 : -1));
      for (const g of others.slice(Math.max(0, maxGrantsPerAccount - 1))) grants.set(g.id, { ...g, revokedAtMs: nowMs });
      return Promise.resolve(true);
    },
    rotateRefreshToken(hash, next, nowMs) {
      const token = refresh.get(hash);
      if (token === undefined) return Promise.resolve({ kind: "invalid" as const });
      store.writes++;
      if (token.usedAtMs !== null) {
        const g = grants.get(token.grantId);
        if (g !== undefined && g.revokedAtMs === null) grants.set(g.id, { ...g, revokedAtMs: nowMs });
        return Promise.resolve({ kind: "reused" as const, grantId: token.grantId });
      }
      const grant = grants.get(token.grantId);
      if (grant === undefined || grant.revokedAtMs !== null || nowMs >= token.expiresAtMs || !clients.has(grant.clientId)) return Promise.resolve({ kind: "invalid" as const });
      refresh.set(hash, { ...token, usedAtMs: nowMs });
      refresh.set(next.tokenHash, next);
      return Promise.resolve({ kind: "rotated" as const, grant });
    },
    findRefreshToken(hash) {
      const token = refresh.get(hash);
      const grant = token === undefined ? undefined : grants.get(token.grantId);
      return Promise.resolve(token === undefined || grant === undefined ? undefined : { token, grant });
    },
    revokeGrant(id, nowMs) {
      const g = grants.get(id);
      if (g !== undefined && g.revokedAtMs === null) {
        store.writes++;
        grants.set(id, { ...g, revokedAtMs: nowMs });
      }
      return Promise.resolve();
    },
    listAuthorizations(accountId, nowMs, max) {
      const live = [...grants.values()].filter((g) => g.accountId === accountId && g.revokedAtMs === null &&
        (g.createdAtMs > nowMs - 3_600_000 || [...refresh.values()].some((t) => t.grantId === g.id && t.usedAtMs === null && t.expiresAtMs > nowMs)));
      const byClient = new Map<string, import("../oauth.ts").Grant[]>();
      for (const g of live) byClient.set(g.clientId, [...(byClient.get(g.clientId) ?? []), g]);
      return Promise.resolve([...byClient].map(([clientId, list]) => ({
        clientId,
        clientName: clients.get(clientId)?.name ?? null,
        scopes: [...new Set(list.map((g) => g.scope))],
        firstAuthorizedAtMs: Math.min(...list.map((g) => g.createdAtMs)),
        lastAuthorizedAtMs: Math.max(...list.map((g) => g.createdAtMs)),
        grants: list.length,
      })).sort((a, b) => b.lastAuthorizedAtMs - a.lastAuthorizedAtMs).slice(0, max));
    },
    revokeAuthorizations(accountId, clientId, nowMs) {
      let n = 0;
      for (const [hash, c] of codes) {
        if (c.accountId === accountId && c.clientId === clientId && c.usedAtMs === null && c.expiresAtMs > nowMs) {
          codes.delete(hash);
          n++;
        }
      }
      for (const g of grants.values()) {
        if (g.accountId === accountId && g.clientId === clientId && g.revokedAtMs === null) {
          grants.set(g.id, { ...g, revokedAtMs: nowMs });
          n++;
        }
      }
      if (n > 0) store.writes++;
      return Promise.resolve(n);
    },
    revokeAccessToken(jti) {
      store.writes++;
      revoked.add(jti);
      return Promise.resolve();
    },
    accessTokenActive: ({ jti, clientId, grantId, accountId }) => {
      const client = clients.get(clientId);
      const grant = grantId === null ? undefined : grants.get(grantId);
      const held = grantId === null
        ? client?.accountId === accountId && client.secretHash !== null
        : grant?.revokedAtMs === null && grant.clientId === clientId && grant.accountId === accountId;
      return Promise.resolve(client !== undefined && !revoked.has(jti) && held);
    },
    signingKeys: () => Promise.resolve([...keys].sort((a, b) => b.createdAtMs - a.createdAtMs).map(withRevocation)),
    addSigningKey(key) {
      keys.push(key);
      return Promise.resolve();
    },
    dropSigningKeys(createdBefore: number, retiredBefore: number) {
      const signing = keys.filter((k) => k.retiredAtMs === null || k.retiredAtMs === undefined).sort((a, b) => b.createdAtMs - a.createdAtMs);
      const goes = (k: (typeof keys)[number]) =>
        k.retiredAtMs === null || k.retiredAtMs === undefined ? k.createdAtMs < createdBefore && k !== signing[0] : k.retiredAtMs < retiredBefore;
      const before = keys.length;
      keys.splice(0, keys.length, ...keys.filter((k) => !goes(k)));
      return Promise.resolve(before - keys.length);
    },
    retireSigningKeys(nowMs: number) {
      let n = 0;
      keys.splice(0, keys.length, ...keys.map((k) => (k.retiredAtMs === null || k.retiredAtMs === undefined ? (n++, { ...k, retiredAtMs: nowMs }) : k)));
      return Promise.resolve(n);
    },
    signerKeys: () => Promise.resolve([...signerKeys.values()].sort((a, b) => b.seenAtMs - a.seenAtMs).map(withRevocation)),
    seeSignerKey(kid: string, publicJwk: string, nowMs: number) {
      const known = signerKeys.get(kid);
      signerKeys.set(kid, known === undefined ? { kid, publicJwk, firstSeenAtMs: nowMs, seenAtMs: nowMs } : { ...known, seenAtMs: Math.max(known.seenAtMs, nowMs) });
      return Promise.resolve();
    },
    dropSignerKeys(seenBefore: number) {
      let n = 0;
      for (const [kid, key] of signerKeys) {
        if (key.seenAtMs >= seenBefore) continue;
        signerKeys.delete(kid);
        n++;
      }
      return Promise.resolve(n);
    },
    revokeKey(kid: string, nowMs: number) {
      if (revokedKeys.has(kid)) return Promise.resolve(false);
      revokedKeys.set(kid, nowMs);
      return Promise.resolve(true);
    },
    revokedKeys: () => Promise.resolve([...revokedKeys].map(([kid, revokedAtMs]) => ({ kid, revokedAtMs })).sort((a, b) => b.revokedAtMs - a.revokedAtMs)),
    prune: () => Promise.resolve(0),
  } satisfies import("../oauth.ts").OAuthStore & { writes: number; clients: unknown; grants: unknown; codes: unknown };
  return store;
}

/**
 * Access-token keys without cryptography: a token is `fake.<base64url JSON claims>`, verified by reading it back
 * against the expected issuer and audience and the clock (a forged token is anything else).
 */
export function fakeAccessTokenKeys(clock: Clock) {
  const signed = new Set<string>();
  const keys = {
    signed,
    sign(claims: import("../oauth.ts").AccessTokenClaims) {
      const token = `fake.${btoa(JSON.stringify(claims)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_")}`;
      signed.add(token);
      return Promise.resolve(token);
    },
    verify(token: string, expected: { issuer: string; audience: string }) {
      if (!signed.has(token)) return Promise.resolve({ ok: false as const, reason: "invalid" as const });
      const claims = JSON.parse(atob(token.slice(5).replace(/-/g, "+").replace(/_/g, "/"))) as import("../oauth.ts").AccessTokenClaims;
      if (claims.iss !== expected.issuer || claims.aud !== expected.audience) return Promise.resolve({ ok: false as const, reason: "invalid" as const });
      if (clock.nowMs() >= claims.exp * 1000) return Promise.resolve({ ok: false as const, reason: "expired" as const });
      return Promise.resolve({ ok: true as const, claims });
    },
    jwks: () => Promise.resolve({ keys: [] }),
    rotate: () => Promise.resolve("fake-kid"),
  };
  return keys satisfies import("../oauth.ts").AccessTokenKeys;
}
