import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js'
import { generateSecretKey } from 'nostr-tools/pure'
import { describe, expect, it } from 'vitest'
import { KithError } from '../../src/errors.js'
import { makeChatMessage } from '../../src/events/chat.js'
import { currentEpoch, epochId, makeEpoch, newEpoch } from '../../src/events/e2e-epoch.js'
import { makeEnvelope, openEnvelope } from '../../src/events/e2e-envelope.js'
import { sealPlan } from '../../src/events/e2e-rotation.js'
import { fitForSealing, openSealed, sealTemplate } from '../../src/events/e2e-seal.js'
import {
  publicKeyOf,
  signEvent,
  verifyEventSignature,
  type NostrEvent,
} from '../../src/events/event.js'

const vectorFile = new URL('../vectors/e2e.json', import.meta.url)
const random = (n: number) => crypto.getRandomValues(new Uint8Array(n))

/** The reason of the KithError `fn` throws (fails the test if it throws none, or another error). */
function reasonOf(fn: () => unknown): string {
  try {
    fn()
  } catch (err) {
    expect(err).toBeInstanceOf(KithError)
    return `${(err as KithError).code}/${(err as KithError).reason}`
  }
  throw new Error('expected a refusal')
}

/** Fixed keys and nonces: the frozen vectors of nips/kith-e2e.md. */
function fixed() {
  const sk = (b: number) => new Uint8Array(32).fill(b)
  const author = sk(1)
  const recipient = sk(2)
  const other = sk(3)
  const fleet = publicKeyOf(sk(9))
  const epoch = makeEpoch('ops', 0, sk(7))
  const prompt = makeChatMessage(
    {
      channel: 'ops',
      text: '@claude the deploy key is hunter2',
      mentions: [publicKeyOf(other)],
      replyTo: { id: 'a'.repeat(64) },
      fleet,
    },
    1_800_000_000,
  )
  const sealed = signEvent(sealTemplate(prompt, publicKeyOf(author), epoch, sk(5)), author)
  const envelope = signEvent(
    makeEnvelope(epoch, publicKeyOf(recipient), author, fleet, 1_800_000_000, sk(6)),
    author,
  )
  return { author, recipient, other, fleet, epoch, prompt, sealed, envelope }
}

function buildVectors() {
  const f = fixed()
  const flip = (s: string, at: number) =>
    s.slice(0, at) + (s[at] === 'A' ? 'B' : 'A') + s.slice(at + 1)
  const wrongEpochKey = makeEpoch('ops', 1, new Uint8Array(32).fill(8))
  const other = makeEpoch('ops', 0, new Uint8Array(32).fill(4))
  return {
    description:
      'kith-e2e/1 vectors. Secret keys are 32 bytes of one value (01 = author, 02 = recipient, 03 = another member); NIP-44 nonces are fixed (05 for the sealed event, 06 for the envelope). `epoch.id` = sha256("kith-e2e/1 epoch:" + channel + ":" + number + ":" || key). Each invalid case names its refusal as code/reason (nips/kith-e2e.md, Refusals).',
    secrets: {
      author: bytesToHex(f.author),
      recipient: bytesToHex(f.recipient),
      other: bytesToHex(f.other),
    },
    epoch: { channel: 'ops', number: 0, key: bytesToHex(f.epoch.key), id: f.epoch.id },
    plaintext: f.prompt,
    sealed: f.sealed,
    envelope: f.envelope,
    invalidSealed: [
      {
        why: 'one base64 character of the ciphertext changed',
        expect: 'invalid/tampered',
        event: signEvent({ ...f.sealed, content: flip(f.sealed.content, 40) }, f.author),
      },
      {
        why: 'another member re-signs the same ciphertext as their own',
        expect: 'invalid/misbound',
        event: signEvent({ ...f.sealed }, f.other),
      },
      {
        why: 'the e2e tag names an epoch whose key is held, but it was sealed with another key',
        expect: 'invalid/tampered',
        event: signEvent(
          {
            ...f.sealed,
            tags: f.sealed.tags.map((t) => (t[0] === 'e2e' ? ['e2e', other.id] : t)),
          },
          f.author,
        ),
      },
    ],
    invalidEnvelopes: [
      {
        why: 'signature of another key (forged)',
        expect: 'invalid/forged',
        event: { ...f.envelope, pubkey: publicKeyOf(f.other) },
      },
      {
        why: 'opened by a key it is not addressed to',
        expect: 'restricted/misaddressed',
        event: signEvent(
          makeEnvelope(f.epoch, publicKeyOf(f.other), f.author, f.fleet, 1_800_000_000),
          f.author,
        ),
      },
      {
        why: 'carries the key of another epoch than the one its tags name',
        expect: 'invalid/wrong-epoch',
        event: signEvent(
          {
            ...makeEnvelope(
              wrongEpochKey,
              publicKeyOf(f.recipient),
              f.author,
              f.fleet,
              1_800_000_000,
            ),
            tags: [
              ['h', 'ops'],
              ['fleet', f.fleet],
              ['epoch', f.epoch.id, '1'],
              ['p', publicKeyOf(f.recipient)],
            ],
          },
          f.author,
        ),
      },
      {
        why: 'ciphertext changed after signing, then re-signed',
        expect: 'invalid/tampered',
        event: signEvent({ ...f.envelope, content: flip(f.envelope.content, 30) }, f.author),
      },
    ],
  }
}

type Vectors = ReturnType<typeof buildVectors>

// KITH_WRITE_VECTORS=1 regenerates the file; otherwise the code must reproduce it exactly.
if (process.env.KITH_WRITE_VECTORS === '1' || !existsSync(vectorFile))
  writeFileSync(vectorFile, `${JSON.stringify(buildVectors(), null, 2)}\n`)
const vectors = JSON.parse(readFileSync(vectorFile, 'utf8')) as Vectors

describe('kith-e2e/1 vectors', () => {
  const recipient = hexToBytes(vectors.secrets.recipient)
  const epoch = makeEpoch('ops', 0, hexToBytes(vectors.epoch.key), vectors.epoch.id)
  const keyOf = (id: string) => (id === epoch.id ? epoch : undefined)

  it('the code reproduces the frozen sealed event, envelope and epoch id', () => {
    const f = fixed()
    expect(f.epoch.id).toBe(vectors.epoch.id)
    // BIP-340 signatures carry fresh randomness: everything else is reproduced exactly.
    const unsigned = (e: NostrEvent) => ({ ...e, sig: undefined })
    expect(unsigned(f.sealed)).toEqual(unsigned(vectors.sealed))
    expect(unsigned(f.envelope)).toEqual(unsigned(vectors.envelope))
    expect(verifyEventSignature(vectors.sealed) && verifyEventSignature(vectors.envelope)).toBe(
      true,
    )
  })

  it('opens the sealed event to the plaintext, with the sealed id and signature', () => {
    const opened = openSealed(vectors.sealed, keyOf)
    expect(opened).toMatchObject({ ...vectors.plaintext, id: vectors.sealed.id })
    // What a hub sees: kind, author, time, channel, fleet, epoch; no text, mention or reply.
    expect(vectors.sealed.tags.map((t) => t[0])).toEqual(['h', 'fleet', 'e2e'])
    expect(JSON.stringify(vectors.sealed)).not.toMatch(/hunter2|claude|aaaa/)
  })

  it('the recipient opens the envelope to the epoch key', () => {
    expect(openEnvelope(vectors.envelope, recipient)).toEqual(epoch)
  })

  it.each(vectors.invalidSealed)('refuses a sealed event: $why', ({ event, expect: code }) => {
    const other = makeEpoch('ops', 0, new Uint8Array(32).fill(4))
    const keys = (id: string) => keyOf(id) ?? (id === other.id ? other : undefined)
    expect(reasonOf(() => openSealed(event, keys))).toBe(code)
  })

  it.each(vectors.invalidEnvelopes)('refuses an envelope: $why', ({ event, expect: code }) => {
    expect(reasonOf(() => openEnvelope(event, recipient))).toBe(code)
  })
})

describe('sealing and opening', () => {
  const alice = generateSecretKey()
  const epoch = newEpoch('ops', 0, random)
  const template = makeChatMessage({ channel: 'ops', text: 'secret plan' }, 1_800_000_000)

  it('an event without a key for its epoch stays sealed (not-found/no-key)', () => {
    const sealed = signEvent(sealTemplate(template, publicKeyOf(alice), epoch), alice)
    expect(reasonOf(() => openSealed(sealed, () => undefined))).toBe('not-found/no-key')
  })

  it('refuses to seal into another channel than the epoch’s, and a key of another channel', () => {
    const other = newEpoch('dev', 0, random)
    expect(reasonOf(() => sealTemplate(template, publicKeyOf(alice), other))).toBe(
      'invalid/misbound',
    )
    const sealed = signEvent(sealTemplate(template, publicKeyOf(alice), epoch), alice)
    // A key claimed to be #dev's under #ops's epoch id cannot be made: the id binds the channel.
    expect(reasonOf(() => makeEpoch('dev', 0, epoch.key, epoch.id))).toBe('invalid/wrong-epoch')
    expect(openSealed(sealed, () => epoch).content).toBe('secret plan')
  })

  it('the visible h or fleet changed after sealing is misbound', () => {
    const sealed = signEvent(
      {
        ...sealTemplate(
          { ...template, tags: [...template.tags, ['fleet', 'f'.repeat(64)]] },
          publicKeyOf(alice),
          epoch,
        ),
      },
      alice,
    )
    const moved = signEvent(
      {
        ...sealed,
        tags: sealed.tags.map((t) => (t[0] === 'fleet' ? ['fleet', 'e'.repeat(64)] : t)),
      },
      alice,
    )
    expect(reasonOf(() => openSealed(moved, () => epoch))).toBe('invalid/misbound')
  })
})

describe('size', () => {
  it('a long answer is cut to fit a sealed event under a hub’s 64 KiB content limit, and says so', () => {
    const epoch = newEpoch('ops', 0, random)
    const agent = generateSecretKey()
    const text = 'line "quoted" \\ é\n'.repeat(4_000)
    const long = makeChatMessage({ channel: 'ops', text }, 1_800_000_000)
    const fitted = fitForSealing(long, publicKeyOf(agent))
    expect(fitted.content).toMatch(/\n… \(truncated to fit a sealed event\)$/)
    expect(text.startsWith(fitted.content.split('\n…')[0]!)).toBe(true)
    const sealed = signEvent(sealTemplate(fitted, publicKeyOf(agent), epoch), agent)
    expect(new TextEncoder().encode(sealed.content).length).toBeLessThanOrEqual(64 * 1024)
    expect(openSealed(sealed, () => epoch).content).toBe(fitted.content)
    const short = makeChatMessage({ channel: 'ops', text: 'short' }, 1_800_000_000)
    expect(fitForSealing(short, publicKeyOf(agent))).toBe(short)
    expect(reasonOf(() => sealTemplate(long, publicKeyOf(agent), epoch))).toBe('invalid/malformed')
  })
})

describe('rotation', () => {
  const e = (id: string, number: number, holders: string[]) => ({
    id,
    number,
    holders: new Set(holders),
  })

  it('creates epoch 0, uses the current one, sends it to new keys, rotates past removed keys', () => {
    const member = (k: string) => k !== 'gone'
    const fresh = (k: string) => k === 'minted'
    expect(sealPlan([], ['a'], member, fresh)).toEqual({ action: 'create', number: 0 })
    expect(sealPlan([e('11', 0, ['a'])], ['a', 'b'], member, fresh)).toEqual({
      action: 'use',
      epochId: '11',
      missing: ['b'],
    })
    expect(sealPlan([e('11', 0, ['a', 'gone'])], ['a'], member, fresh)).toEqual({
      action: 'rotate',
      number: 1,
      removed: ['gone'],
      joined: [],
    })
    // Once rotated past the removed key, the new epoch is used: the old one is only read.
    expect(
      sealPlan([e('11', 0, ['a', 'gone']), e('22', 1, ['a'])], ['a'], member, fresh),
    ).toMatchObject({ action: 'use', epochId: '22' })
    // A key that may read no history is never handed the current epoch: it joins at a new one,
    // and once it holds that, the new epoch is used.
    expect(sealPlan([e('11', 0, ['a'])], ['a', 'minted'], member, fresh)).toEqual({
      action: 'rotate',
      number: 1,
      removed: [],
      joined: ['minted'],
    })
    expect(
      sealPlan([e('11', 0, ['a']), e('22', 1, ['a', 'minted'])], ['a', 'minted'], member, fresh),
    ).toMatchObject({ action: 'use', epochId: '22', missing: [] })
  })

  it('two concurrent rotations converge on the lowest id of the highest number', () => {
    const a = newEpoch('ops', 3, random)
    const b = newEpoch('ops', 3, random)
    const old = newEpoch('ops', 2, random)
    const winner = a.id < b.id ? a : b
    expect(currentEpoch([old, a, b])).toBe(winner)
    expect(currentEpoch([b, old, a])).toBe(winner)
  })

  it('epoch ids differ by channel and number for one key', () => {
    const key = random(32)
    expect(
      new Set([epochId('ops', 0, key), epochId('ops', 1, key), epochId('dev', 0, key)]).size,
    ).toBe(3)
  })
})
