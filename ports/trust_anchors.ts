/** One approved issuer in an `approved-issuers` registry. */
export type TrustedIssuer = {
  readonly address: string;
  readonly label: string;
  readonly schemas: readonly string[];
  readonly status?: "active" | "revoked" | undefined;
  readonly validFrom?: string | undefined;
  readonly revokedAt?: string | undefined;
};

/** A trust registry; only `approved-issuers` exists today. */
export type TrustRegistry = {
  readonly type: "approved-issuers";
  readonly issuers: readonly TrustedIssuer[];
};

/** The anchors of one chain, keyed in `chains` by CAIP-2 id (`eip155:<chainId>`). */
export type ChainAnchors = {
  readonly name: string;
  readonly easContract: string;
  readonly schemas: Readonly<Record<string, string>>;
};

/** The trust anchors record, as loaded from the configured file and served as loaded. */
export type TrustAnchors = {
  readonly version: number;
  readonly updatedAt: string;
  readonly widgetOrigins: readonly string[];
  readonly chains: Readonly<Record<string, ChainAnchors>>;
  readonly registries: readonly TrustRegistry[];
};
