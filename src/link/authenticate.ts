import type { NostrEvent } from '../events/event.js'
import { signAuthEvent } from '../events/nip42.js'
import {
  relayVerdict,
  saysDuplicate,
  saysRevoked,
  type OkAnswer,
  type RelayClient,
} from './relay-client.js'

/**
 * The link handshake, written once (kith-chat/1, "Connecting"; kith-hub/1, "AUTH"): wait for the
 * hub's NIP-42 challenge, publish this key's grant chain (a hub takes grants unauthenticated, so
 * it knows the key before AUTH), then AUTH. The node's links (hub-link.ts), the hub's peer links
 * (peer-sync.ts), one-off calls (hub-call.ts), the web app (web/app/lib/link.ts) and the
 * service worker (web/sw/push.ts) all call it and act on its coded result; it imports no Node
 * built-in, so it runs in a browser.
 */

/** Kith hubs send their challenge on connect; a relay silent this long has no NIP-42. */
export const challengeWaitMs = 3_000

export type AuthResult =
  /** Authenticated; `message` is the hub's OK text (often empty). */
  | { code: 'ok'; message: string }
  /** No challenge came: a plain NIP-01 relay (or not a Kith hub). The caller decides. */
  | { code: 'no-challenge' }
  /**
   * The hub refused AUTH as revoked (`restricted: revoked`): final for the link, retrying
   * cannot help.
   */
  | { code: 'revoked'; reason: string; message: string }
  /** The hub refused AUTH for another reason (`reason`: its NIP-01 prefix, e.g. `restricted`). */
  | { code: 'refused'; reason: string; message: string }

export interface AuthenticateOptions {
  /** The key that authenticates (a device's, or a hub's for its peer links). */
  secret: Uint8Array
  /** Published before AUTH, in order (founder first). */
  chain?: readonly NostrEvent[]
  /** A chain event the hub refused (not as a duplicate): logged by the caller, not fatal. */
  onChainRefused?: (event: NostrEvent, answer: OkAnswer) => void
  /** How long to wait for the challenge (default `challengeWaitMs`). */
  challengeWaitMs?: number
  /** Called once the chain is published, just before AUTH (the web app marks its phases). */
  beforeAuth?: () => void
  /** The relay URL the AUTH event names (NIP-42 `relay` tag); default the client's URL. */
  url?: string
}

export async function authenticate(
  client: RelayClient,
  opts: AuthenticateOptions,
): Promise<AuthResult> {
  const challenge = await client.challenge(opts.challengeWaitMs ?? challengeWaitMs)
  if (challenge === undefined) return { code: 'no-challenge' }
  for (const e of opts.chain ?? []) {
    const r = await client.publish(e)
    if (!r.ok && !saysDuplicate(r.message)) opts.onChainRefused?.(e, r)
  }
  opts.beforeAuth?.()
  const answer = await client.auth(signAuthEvent(opts.url ?? client.url, challenge, opts.secret))
  if (answer.ok) return { code: 'ok', message: answer.message }
  const verdict = relayVerdict(answer.message)
  return saysRevoked(answer.message)
    ? { code: 'revoked', reason: verdict.reason, message: answer.message }
    : { code: 'refused', reason: verdict.code, message: answer.message }
}
