/**
 * The one error type of Kith. `code` is stable: tests, scripts and the wire mapping depend on it.
 * Edges map codes to NIP-01 prefixes (`toNostrPrefix`) and to CLI exit codes (`toExitCode`).
 */
export type KithErrorCode =
  // Wire-level refusals (NIP-01 machine-readable prefixes).
  | 'invalid'
  | 'auth-required'
  | 'restricted'
  | 'rate-limited'
  | 'duplicate'
  | 'blocked'
  | 'error'
  // Local, CLI-level failures.
  | 'usage'
  | 'not-initialized'
  | 'key-exists'
  | 'key-mismatch'
  | 'insecure-key-file'
  | 'bad-key'
  | 'bad-url'
  | 'config'
  | 'io'
  | 'unsafe-bind'
  | 'not-found'
  // A kith-pair/1 pairing that stopped; its `reason` says why (pairing/protocol/errors.ts).
  | 'pairing-failed'

export class KithError extends Error {
  override readonly name: string = 'KithError'
  readonly code: KithErrorCode
  /**
   * The stable sub-code under `code` (a grant or channel refusal's `revoked`, `no-authority`…),
   * so callers branch on it instead of parsing the message.
   */
  readonly reason: string | undefined

  constructor(
    code: KithErrorCode,
    message: string,
    options?: { cause?: unknown; reason?: string },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.reason = options?.reason
  }
}

export function isKithError(err: unknown, code?: KithErrorCode): err is KithError {
  return err instanceof KithError && (code === undefined || err.code === code)
}

const nostrPrefixes: ReadonlySet<KithErrorCode> = new Set([
  'invalid',
  'auth-required',
  'restricted',
  'rate-limited',
  'duplicate',
  'blocked',
  'error',
])

/** `invalid: bad signature` — the NIP-01 OK/CLOSED message for an error. */
export function toNostrMessage(err: unknown): string {
  if (err instanceof KithError && nostrPrefixes.has(err.code)) return `${err.code}: ${err.message}`
  return 'error: internal error'
}

/**
 * Stable process exit codes: 0 ok, 1 failure, 2 usage, 3 not initialized, 4 insecure key file,
 * 5 no such thing here (an agent name this node does not host).
 */
export function toExitCode(err: unknown): number {
  if (!(err instanceof KithError)) return 1
  switch (err.code) {
    case 'usage':
    case 'bad-url':
    case 'unsafe-bind':
      return 2
    case 'not-initialized':
      return 3
    case 'insecure-key-file':
      return 4
    case 'not-found':
      return 5
    default:
      return 1
  }
}
