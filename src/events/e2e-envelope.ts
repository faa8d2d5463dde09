import {
  decrypt as nip44Decrypt,
  encrypt as nip44Encrypt,
  getConversationKey,
} from 'nostr-tools/nip44'
import { bytesToHex } from '@noble/hashes/utils.js'
import { e2eError } from './e2e-codes.js'
import { epochKeyFromHex, makeEpoch, maxEpochNumber, type Epoch } from './e2e-epoch.js'
import {
  isHex64,
  publicKeyOf,
  verifyEventSignature,
  type EventTemplate,
  type NostrEvent,
} from './event.js'
import { Kind } from './kinds.js'

/** The inner JSON of an envelope: which epoch, and its key. */
interface EnvelopeInner {
  v: 1
  channel: string
  number: number
  key: string
}

/**
 * A key envelope (kind 4145, kith-e2e/1 "Envelopes"): `epoch`'s key, NIP-44 v2 encrypted from
 * the signer to one `recipient` key. Visible: the channel (`h`, so private channels' envelopes
 * go only to members), the fleet, the epoch id and number (so members see which epochs exist and
 * who holds each, which decides rotation), and the recipient (`p`, so it is delivered).
 */
export function makeEnvelope(
  epoch: Epoch,
  recipient: string,
  senderSecret: Uint8Array,
  fleet: string,
  createdAt: number,
  nonce?: Uint8Array,
): EventTemplate {
  if (!isHex64(recipient)) throw e2eError('malformed', 'recipient must be 64 hex')
  const inner: EnvelopeInner = {
    v: 1,
    channel: epoch.channel,
    number: epoch.number,
    key: bytesToHex(epoch.key),
  }
  return {
    kind: Kind.KeyEnvelope,
    created_at: createdAt,
    tags: [
      ['h', epoch.channel],
      ['fleet', fleet],
      ['epoch', epoch.id, String(epoch.number)],
      ['p', recipient],
    ],
    content: nip44Encrypt(
      JSON.stringify(inner),
      getConversationKey(senderSecret, recipient),
      nonce,
    ),
  }
}

/** What an envelope's visible tags say, without opening it. */
export interface EnvelopeHead {
  channel: string
  epochId: string
  number: number
  recipient: string
}

/** The visible part of an envelope; throws `malformed`. */
export function parseEnvelopeHead(event: Pick<NostrEvent, 'kind' | 'tags'>): EnvelopeHead {
  const one = (name: string) => {
    const t = event.tags.filter((x) => x[0] === name)
    if (t.length !== 1) throw e2eError('malformed', `an envelope has exactly one ${name} tag`)
    return t[0]!
  }
  if (event.kind !== Kind.KeyEnvelope) throw e2eError('malformed', 'not a key envelope')
  const h = one('h')[1]
  const [, epochId, n] = one('epoch')
  const recipient = one('p')[1]
  const number = Number(n)
  if (
    h === undefined ||
    !isHex64(epochId) ||
    !isHex64(recipient) ||
    n === undefined ||
    !/^(0|[1-9][0-9]{0,15})$/.test(n) ||
    !Number.isSafeInteger(number) ||
    number > maxEpochNumber
  )
    throw e2eError('malformed', 'an envelope needs h, ["epoch", <id>, <number>] and p')
  return { channel: h, epochId, number, recipient }
}

/**
 * Opens an envelope addressed to `recipientSecret`'s key (kith-e2e/1, "Opening an envelope"),
 * in this order: `forged` (id or signature), `malformed`, `misaddressed` (its `p` is another
 * key), `tampered` (does not decrypt from its signer), `misbound` (the inside names another
 * channel or number than the tags), `wrong-epoch` (the key is not the key of the epoch it names).
 * Whether the signer may hand out this channel's keys is the caller's question (`not-a-member`).
 */
export function openEnvelope(event: NostrEvent, recipientSecret: Uint8Array): Epoch {
  if (!verifyEventSignature(event))
    throw e2eError('forged', 'the envelope is not signed by its author')
  const head = parseEnvelopeHead(event)
  if (head.recipient !== publicKeyOf(recipientSecret))
    throw e2eError('misaddressed', 'the envelope is addressed to another key')
  let plaintext: string
  try {
    plaintext = nip44Decrypt(event.content, getConversationKey(recipientSecret, event.pubkey))
  } catch (err) {
    throw e2eError('tampered', 'the envelope does not open from its signer', err)
  }
  let inner: Partial<EnvelopeInner>
  try {
    inner = JSON.parse(plaintext) as Partial<EnvelopeInner>
  } catch (err) {
    throw e2eError('malformed', 'the envelope plaintext is not JSON', err)
  }
  if (inner?.v !== 1 || typeof inner.key !== 'string')
    throw e2eError('malformed', 'the envelope plaintext is not kith-e2e/1')
  if (inner.channel !== head.channel || inner.number !== head.number)
    throw e2eError('misbound', 'the envelope plaintext names another channel or epoch number')
  return makeEpoch(head.channel, head.number, epochKeyFromHex(inner.key), head.epochId)
}
