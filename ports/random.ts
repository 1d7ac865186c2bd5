/** Cryptographically secure random bytes; the domain never reads randomness itself. */
export interface Random {
  readonly bytes: (length: number) => Uint8Array;
}
