import { encrypt as nip44Encrypt } from 'nostr-tools/nip44'
import { generateSecretKey } from 'nostr-tools/pure'
import { describe, expect, it } from 'vitest'
import { KithError } from '../../src/errors.js'
import { newEpoch, type Epoch } from '../../src/events/e2e-epoch.js'
import { openSealed, sealTemplate } from '../../src/events/e2e-seal.js'
import { publicKeyOf, signEvent, type NostrEvent } from '../../src/events/event.js'
import { nip44DecryptNative } from '../../src/node/nip44-native.js'
// The worker file only exists compiled, so this test drives the built module (npm test builds).
const distAhead = '../../dist/node/e2e-open-ahead.js'
const { OpenAhead } = (await import(distAhead)) as typeof import('../../src/node/e2e-open-ahead.js')

const random = (n: number) => crypto.getRandomValues(new Uint8Array(n))
const sk = generateSecretKey()
const author = publicKeyOf(sk)
const other = generateSecretKey()

const seal = (epoch: Epoch, text: string, at: number, signer = sk) =>
  signEvent(
    sealTemplate(
      { kind: 9, created_at: at, tags: [['h', epoch.channel]], content: text },
      author,
      epoch,
    ),
    signer,
  )

/** What opening says of `event`: the opened event, or the refusal's code/reason and message. */
function outcome(event: NostrEvent, open: () => NostrEvent): unknown {
  try {
    return open()
  } catch (err) {
    expect(err).toBeInstanceOf(KithError)
    const k = err as KithError
    return { refused: `${k.code}/${k.reason}`, message: k.message }
  }
}

/** Every event opened inline and with the worker's decryption, in order, side by side. */
async function both(events: NostrEvent[], keyOf: (id: string) => Epoch | undefined) {
  const ahead = new OpenAhead({ minEvents: 1, log: () => undefined })
  try {
    const decrypted = await ahead.start(events, keyOf)
    const inline = events.map((e) => outcome(e, () => openSealed(e, keyOf, nip44DecryptNative)))
    const worker = events.map((e) =>
      outcome(e, () => openSealed(e, keyOf, decrypted?.for(e) ?? nip44DecryptNative)),
    )
    return { inline, worker, decrypted, running: ahead.running }
  } finally {
    await ahead.close()
  }
}

describe('OpenAhead: decryption in a worker thread opens exactly as inline', () => {
  it('opens many events of several epochs, in order', async () => {
    const epochs = [newEpoch('ops', 0, random), newEpoch('dev', 0, random)]
    const byId = new Map(epochs.map((e) => [e.id, e]))
    const events = Array.from({ length: 300 }, (_, i) => seal(epochs[i % 2]!, `message ${i}`, i))
    const { inline, worker, decrypted, running } = await both(events, (id) => byId.get(id))
    expect(running).toBe(1)
    expect(decrypted?.size).toBe(300)
    expect(worker).toEqual(inline)
    expect(worker.map((e) => (e as NostrEvent).content)).toEqual(
      events.map((_, i) => `message ${i}`),
    )
  })

  it('refuses what inline refuses, with the same reason: malformed, no-key, tampered, misbound', async () => {
    const ops = newEpoch('ops', 0, random)
    const unheld = newEpoch('ops', 1, random)
    const good = seal(ops, 'fine', 10)
    const flip = (s: string, at: number) =>
      s.slice(0, at) + (s[at] === 'A' ? 'B' : 'A') + s.slice(at + 1)
    const notJson = signEvent(
      { ...good, content: nip44Encrypt('not json', ops.key), tags: good.tags },
      sk,
    )
    const cases: Record<string, NostrEvent> = {
      good,
      // Refused before any decryption.
      twoE2eTags: signEvent({ ...good, tags: [...good.tags, ['e2e', ops.id]] }, sk),
      notASealedKind: signEvent({ ...good, kind: 1 }, sk),
      noKey: seal(unheld, 'nobody here holds this', 11),
      // Decrypted in the worker, refused on the main thread.
      tampered: signEvent({ ...good, content: flip(good.content, 60) }, sk),
      // Another member re-signs the same ciphertext as their own.
      misbound: signEvent({ ...good }, other),
      notJson,
      notBase64: signEvent({ ...good, content: `${good.content.slice(0, -4)}!!!!` }, sk),
    }
    const events = Object.values(cases)
    const keyOf = (id: string) => (id === ops.id ? ops : undefined)
    const { inline, worker, decrypted } = await both(events, keyOf)
    expect(worker).toEqual(inline)
    const said = Object.fromEntries(Object.keys(cases).map((k, i) => [k, worker[i]]))
    expect((said.good as NostrEvent).content).toBe('fine')
    expect(said).toMatchObject({
      twoE2eTags: { refused: 'invalid/malformed' },
      notASealedKind: { refused: 'invalid/malformed' },
      noKey: { refused: 'not-found/no-key' },
      tampered: { refused: 'invalid/tampered' },
      misbound: { refused: 'invalid/misbound' },
      notJson: { refused: 'invalid/malformed' },
      notBase64: { refused: 'invalid/tampered' },
    })
    // Only the events whose key was held went to the worker (and not the wrong kind).
    expect(decrypted?.size).toBe(6)
  })

  it('decrypts inline when the key at opening is not the one the worker used', async () => {
    const ops = newEpoch('ops', 0, random)
    const events = [seal(ops, 'one', 1), seal(ops, 'two', 2)]
    const ahead = new OpenAhead({ minEvents: 1, log: () => undefined })
    try {
      const decrypted = await ahead.start(events, () => ops)
      // The same epoch id, another key: the worker's answer does not count; inline refuses.
      const swapped = { ...ops, key: random(32) }
      const e = events[0]!
      expect(outcome(e, () => openSealed(e, () => swapped, decrypted!.for(e)))).toMatchObject({
        refused: 'invalid/tampered',
      })
      expect(openSealed(e, () => ops, decrypted!.for(e)).content).toBe('one')
    } finally {
      await ahead.close()
    }
  })

  it('leaves a small batch to inline decryption and starts no worker', async () => {
    const ops = newEpoch('ops', 0, random)
    const ahead = new OpenAhead({ minEvents: 10, log: () => undefined })
    try {
      const events = Array.from({ length: 9 }, (_, i) => seal(ops, `m${i}`, i))
      expect(await ahead.start(events, () => ops)).toBeUndefined()
      expect(ahead.running).toBe(0)
    } finally {
      await ahead.close()
    }
  })

  it('falls back to inline when the worker dies, and starts a new one for the next batch', async () => {
    const ops = newEpoch('ops', 0, random)
    const events = Array.from({ length: 50 }, (_, i) => seal(ops, `m${i}`, i))
    const lines: string[] = []
    const ahead = new OpenAhead({ minEvents: 1, log: (l) => lines.push(l) })
    try {
      // Ended in the same turn as the job is posted: before the worker has even loaded.
      const pending = ahead.start(events, () => ops)
      const worker = (ahead as unknown as { worker: { terminate(): Promise<number> } }).worker
      await worker.terminate()
      expect(await pending).toBeUndefined()
      expect(lines.join('\n')).toMatch(/decrypting inline: the worker exited/)
      const again = await ahead.start(events.slice(0, 5), () => ops)
      expect(again?.size).toBe(5)
      expect(openSealed(events[3]!, () => ops, again!.for(events[3]!)).content).toBe('m3')
    } finally {
      await ahead.close()
    }
  })
})
