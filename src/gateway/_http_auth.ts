// Bearer-token identity for the HTTP service (private to src/gateway/): each configured token
// names a caller id. A presented token is hashed (SHA-256) and compared with the hash of every
// configured token in constant time: no early exit on the first differing byte, and no early
// exit on the first matching token, so the time says neither which byte nor which token.

const encoder = new TextEncoder();

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
}

/** Whether two 32-byte digests are equal, looking at every byte. */
function digestsEqual(a: Uint8Array, b: Uint8Array): boolean {
  let difference = a.length ^ b.length;
  for (let i = 0; i < a.length; i++) difference |= a[i] ^ (b[i] ?? 0);
  return difference === 0;
}

/** The configured tokens, hashed once. */
export class BearerTokens {
  readonly #hashed: Promise<ReadonlyArray<readonly [Uint8Array, string]>>;
  readonly size: number;

  constructor(tokens: ReadonlyMap<string, string>) {
    this.size = tokens.size;
    this.#hashed = Promise.all(
      [...tokens].map(async ([token, callerId]) => [await sha256(token), callerId] as const),
    );
  }

  /**
   * The caller id of the request's `Authorization: Bearer <token>`, or `undefined` (no header,
   * another scheme, or an unknown token).
   */
  async callerOf(request: Request): Promise<string | undefined> {
    const header = request.headers.get("authorization");
    const match = header === null ? null : /^Bearer[ ]+([^ ]+)[ ]*$/i.exec(header);
    // An absent token is still hashed and compared, so its timing matches a wrong one.
    const presented = await sha256(match?.[1] ?? "");
    let callerId: string | undefined;
    for (const [hash, owner] of await this.#hashed) {
      if (digestsEqual(presented, hash) && match !== null) callerId = owner;
    }
    return callerId;
  }
}
