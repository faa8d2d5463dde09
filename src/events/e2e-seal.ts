import { hmac } from '@noble/hashes/hmac.js'
import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js'
import { decrypt as nip44Decrypt, encrypt as nip44Encrypt } from 'nostr-tools/nip44'
import { e2eError } from './e2e-codes.js'
import { isHex64, type EventTemplate, type NostrEvent } from './event.js'
import type { Epoch } from './e2e-epoch.js'
import { isAddressableKind, Kind } from './kinds.js'

/** The kinds whose content and revealing tags are sealed in an encrypted fleet (kith-e2e/1). */
export const sealedKinds: ReadonlySet<number> = new Set([
  Kind.ChatMessage,
  Kind.PermissionRequest,
  Kind.PermissionDecision,
  Kind.AgentControl,
  // Session reports and requests (kith-agents/1, Sessions): titles, working directories, modes.
  Kind.SessionState,
  Kind.SessionControl,
])

/**
 * The `d` a sealed addressable event shows (kith-e2e/1, "Addressable kinds"): HMAC-SHA256 keyed
 * with the author's secret over `kith-e2e-d:` and the inner `d`. Stable for one author and
 * address (so a hub still keeps only the newest report), unlinkable to the thread or agent it
 * names by anyone without that secret.
 */
export function opaqueAddress(authorSecret: Uint8Array, d: string): string {
  return bytesToHex(hmac(sha256, authorSecret, utf8ToBytes(`kith-e2e-d:${d}`)))
}

/**
 * Tags left visible on a sealed event, and why each must be (kith-e2e/1, "What a hub sees"):
 * `h` (the channel: grants' channel caps and private channels' membership are enforced on it),
 * `fleet` (the binding check refuses events made for another fleet) and `e2e` (which epoch's
 * key opens it). Everything else (mentions, replies, quoted prompts, tool calls) is inside.
 */
export const visibleTagNames: ReadonlySet<string> = new Set(['h', 'fleet'])

/**
 * The largest plaintext (the inner JSON, UTF-8) a sealed event carries: NIP-44 pads 32,769 to
 * 40,960 bytes to 40,960, and its base64 then stays under the 64 KiB content limit of a Kith hub
 * (hub/limits.ts `maxContentBytes`); the next padding step (49,152) would not.
 */
export const maxSealedPlaintext = 40_960

/** The inner JSON of a sealed event: the whole event as its author made it, less id and sig. */
interface Inner {
  v: 1
  pubkey: string
  kind: number
  created_at: number
  tags: string[][]
  content: string
}

export function isSealed(event: Pick<NostrEvent, 'tags'>): boolean {
  return event.tags.some((t) => t[0] === 'e2e')
}

/** The epoch id a sealed event names (its one `e2e` tag), or undefined when it is not sealed. */
export function sealedEpochId(event: Pick<NostrEvent, 'tags'>): string | undefined {
  return event.tags.find((t) => t[0] === 'e2e')?.[1]
}

/**
 * Seals a template for `author` under `epoch` (kith-e2e/1, "Sealing"): the visible tags stay
 * (`h`, `fleet`), an `["e2e", <epoch id>]` tag is added, and `content` becomes the NIP-44 v2
 * encryption, with the epoch key as conversation key, of the JSON of the whole event (author,
 * kind, time, every tag, content). The caller signs the result, so the signature covers the
 * ciphertext and the plaintext names the signer: no member can re-sign another's ciphertext as
 * their own. `nonce` is for test vectors only.
 */
export function sealTemplate(
  template: EventTemplate,
  author: string,
  epoch: Epoch,
  nonce?: Uint8Array,
  /** For an addressable kind: the author's secret, which keys its visible `d`. */
  addressKey?: Uint8Array,
): EventTemplate {
  if (!sealedKinds.has(template.kind))
    throw e2eError('malformed', `kind ${template.kind} is not sealed`)
  if (!isHex64(author)) throw e2eError('malformed', 'author must be 64 hex')
  const h = template.tags.filter((t) => t[0] === 'h')
  if (h.length !== 1 || h[0]![1] !== epoch.channel)
    throw e2eError(
      'misbound',
      `a sealed event has one h tag, the epoch's channel #${epoch.channel}`,
    )
  if (isSealed(template)) throw e2eError('malformed', 'already sealed')
  const inner: Inner = {
    v: 1,
    pubkey: author,
    kind: template.kind,
    created_at: template.created_at,
    tags: template.tags,
    content: template.content,
  }
  const plaintext = JSON.stringify(inner)
  if (new TextEncoder().encode(plaintext).length > maxSealedPlaintext)
    throw e2eError('malformed', `too large to seal (at most ${maxSealedPlaintext} bytes inside)`)
  const outer = template.tags.filter((t) => visibleTagNames.has(t[0]!))
  if (isAddressableKind(template.kind)) {
    const d = template.tags.find((t) => t[0] === 'd')?.[1]
    if (d === undefined || addressKey === undefined)
      throw e2eError('malformed', 'a sealed addressable event needs its d and its author key')
    outer.unshift(['d', opaqueAddress(addressKey, d)])
  }
  return {
    kind: template.kind,
    created_at: template.created_at,
    tags: [...outer, ['e2e', epoch.id]],
    content: nip44Encrypt(plaintext, epoch.key, nonce),
  }
}

/**
 * Opens a sealed event (kith-e2e/1, "Opening") whose signature the caller has verified: the
 * event as its author made it, with the sealed event's id and sig (the id it is known by
 * everywhere; the signature is over the sealed form). Refusals, as KithError reasons:
 * `malformed`, `no-key` (keyOf knows no such epoch), `tampered` (the ciphertext does not
 * authenticate), `misbound` (the plaintext names another author, kind, time, channel or fleet).
 */
export function openSealed(
  event: NostrEvent,
  keyOf: (epochId: string) => Epoch | undefined,
  /** NIP-44 v2 decryption; a node passes its native one (node/nip44-native.ts). */
  decrypt: (payload: string, conversationKey: Uint8Array) => string = nip44Decrypt,
): NostrEvent {
  const e2e = event.tags.filter((t) => t[0] === 'e2e')
  if (e2e.length !== 1 || !isHex64(e2e[0]![1]) || e2e[0]!.length !== 2)
    throw e2eError('malformed', 'a sealed event has exactly one ["e2e", <epoch id>] tag')
  if (!sealedKinds.has(event.kind)) throw e2eError('malformed', `kind ${event.kind} is not sealed`)
  const id = e2e[0]![1]
  const epoch = keyOf(id)
  if (epoch === undefined) throw e2eError('no-key', `no key of epoch ${id.slice(0, 12)}… here`)
  let plaintext: string
  try {
    plaintext = decrypt(event.content, epoch.key)
  } catch (err) {
    throw e2eError('tampered', 'the ciphertext does not open with its epoch key', err)
  }
  const inner = parseInner(plaintext)
  const visible = (tags: string[][]) =>
    JSON.stringify(tags.filter((t) => visibleTagNames.has(t[0]!)))
  const outer = event.tags.filter((t) => t[0] !== 'e2e')
  if (
    inner.pubkey !== event.pubkey ||
    inner.kind !== event.kind ||
    inner.created_at !== event.created_at ||
    visible(inner.tags) !== visible(outer) ||
    inner.tags.some((t) => t[0] === 'e2e') ||
    epoch.channel !== inner.tags.find((t) => t[0] === 'h')?.[1]
  )
    throw e2eError('misbound', 'the sealed plaintext does not match the event that carries it')
  return {
    id: event.id,
    pubkey: event.pubkey,
    created_at: event.created_at,
    kind: event.kind,
    tags: inner.tags,
    content: inner.content,
    sig: event.sig,
  }
}

function parseInner(plaintext: string): Inner {
  let v: unknown
  try {
    v = JSON.parse(plaintext)
  } catch (err) {
    throw e2eError('malformed', 'the sealed plaintext is not JSON', err)
  }
  const o = v as Partial<Inner> | null
  if (
    typeof o !== 'object' ||
    o === null ||
    o.v !== 1 ||
    typeof o.pubkey !== 'string' ||
    typeof o.kind !== 'number' ||
    typeof o.created_at !== 'number' ||
    typeof o.content !== 'string' ||
    !Array.isArray(o.tags) ||
    !o.tags.every((t) => Array.isArray(t) && t.length > 0 && t.every((s) => typeof s === 'string'))
  )
    throw e2eError('malformed', 'the sealed plaintext is not a kith-e2e/1 event')
  return o as Inner
}

const truncatedNote = '\n… (truncated to fit a sealed event)'

/**
 * `template` with its content cut (and so marked) so that sealing it fits `maxSealedPlaintext`;
 * unchanged when it fits already. A long agent answer is sent shortened rather than refused.
 */
export function fitForSealing(template: EventTemplate, author: string): EventTemplate {
  const size = (content: string) =>
    new TextEncoder().encode(
      JSON.stringify({
        v: 1,
        pubkey: author,
        kind: template.kind,
        created_at: template.created_at,
        tags: template.tags,
        content,
      }),
    ).length
  if (size(template.content) <= maxSealedPlaintext) return template
  let chars = template.content.length
  let content = template.content
  while (chars > 0 && size(content) > maxSealedPlaintext) {
    chars = Math.floor((chars * maxSealedPlaintext) / size(content)) - 64
    content = `${template.content.slice(0, Math.max(0, chars))}${truncatedNote}`
  }
  return { ...template, content }
}
