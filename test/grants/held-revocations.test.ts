import { describe, expect, it } from 'vitest'
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js'
import { generateSecretKey } from 'nostr-tools/pure'
import { publicKeyOf, signEvent, type NostrEvent } from '../../src/events/event.js'
import { signGrant, type GrantSpec } from '../../src/grants/grant.js'
import { makeRevocation, maxRevocationTargets } from '../../src/grants/revocation.js'
import { heldTargetsPerSigner } from '../../src/grants/verifier.js'
import type { HubLimits } from '../../src/hub/limits.js'
import { startTestHub, type TestHub } from '../helpers/hub.js'
import type { RawClient } from '../helpers/raw-client.js'

const now = () => Math.floor(Date.now() / 1000)
const key = () => {
  const sk = generateSecretKey()
  return { sk, pk: publicKeyOf(sk) }
}
const randomKeys = (n: number) => Array.from({ length: n }, () => bytesToHex(randomBytes(32)))

async function publish(c: RawClient, e: NostrEvent) {
  c.send(['EVENT', e])
  return c.ok(e.id)
}

/**
 * The founder admits Ann as an admin owner; Ann admits her laptop and Mallory, a plain owner
 * with a laptop of her own. Mallory is the attacker; Ann is the admin she names.
 */
async function fleet(limits: Partial<HubLimits> = {}) {
  const t: TestHub = await startTestHub({ limits })
  const founder = await t.member()
  const g = (spec: Omit<GrantSpec, 'fleet' | 'proof'>, by: Uint8Array, to: Uint8Array) =>
    signGrant({ ...spec, fleet: t.owner }, by, to, now())
  const ann = key()
  const annLaptop = key()
  const mallory = key()
  const malloryLaptop = key()
  const annGrant = g({ subject: ann.pk, role: 'owner', deleg: true }, t.ownerSk, ann.sk)
  const annLaptopGrant = g(
    { subject: annLaptop.pk, role: 'device', parent: annGrant.id },
    ann.sk,
    annLaptop.sk,
  )
  const malloryGrant = g(
    { subject: mallory.pk, role: 'owner', parent: annGrant.id },
    ann.sk,
    mallory.sk,
  )
  const malloryLaptopGrant = g(
    { subject: malloryLaptop.pk, role: 'device', parent: malloryGrant.id },
    mallory.sk,
    malloryLaptop.sk,
  )
  for (const e of [annGrant, annLaptopGrant, malloryGrant, malloryLaptopGrant]) {
    expect((await publish(founder, e))[2]).toBe(true)
  }
  const malloryConn = await t.connect()
  expect((await malloryConn.auth(t.url, malloryLaptop.sk))[2]).toBe(true)
  const revoke = (keys: string[], sk = malloryLaptop.sk) =>
    signEvent(makeRevocation({ fleet: t.owner, keys }, now()), sk)
  /** Ann's laptop still authenticates and posts: nothing Mallory sent changed its standing. */
  const annStillIn = async () => {
    const c = await t.connect()
    expect((await c.auth(t.url, annLaptop.sk))[2]).toBe(true)
    const post = signEvent(
      { kind: 1, created_at: now(), tags: [], content: 'still here' },
      annLaptop.sk,
    )
    expect(await publish(c, post)).toEqual(['OK', post.id, true, ''])
  }
  return { t, founder, ann, annLaptop, mallory, malloryLaptop, malloryConn, revoke, annStillIn }
}

describe('held revocations are bounded: a member cannot make the hub keep work for nothing', () => {
  it('refuses revocations naming a key above the signer on every chain (her admin), repeated or not', async () => {
    const f = await fleet()
    const repeated = Array<string>(maxRevocationTargets).fill(f.ann.pk)
    for (const keys of [[f.ann.pk], repeated, [f.mallory.pk]]) {
      const r = await publish(f.malloryConn, f.revoke(keys))
      expect(r[2]).toBe(false)
      expect(r[3]).toMatch(/^restricted: no-authority: /)
    }
    // Her own key: never above itself.
    const self = await publish(f.malloryConn, f.revoke([f.malloryLaptop.pk]))
    expect(self[3]).toBe('restricted: no-authority: a key cannot revoke itself')
    await f.annStillIn()
  })

  it('bounds what one signer may hold: repeated targets count once, past the cap refused', async () => {
    const f = await fleet()
    // Ann's laptop is not above Mallory (a grant from Mallory to it could still come): held,
    // however many times it is named.
    const repeated = Array<string>(maxRevocationTargets).fill(f.annLaptop.pk)
    const once = await publish(f.malloryConn, f.revoke(repeated))
    expect(once[2]).toBe(true)
    expect(once[3]).toMatch(/^held: /)
    // 999 targets left under the cap, in revocations of at most maxRevocationTargets each.
    for (let left = heldTargetsPerSigner - 1; left > 0; left -= maxRevocationTargets) {
      const fill = await publish(
        f.malloryConn,
        f.revoke(randomKeys(Math.min(left, maxRevocationTargets))),
      )
      expect(fill[3]).toMatch(/^held: /)
    }
    const over = await publish(f.malloryConn, f.revoke(randomKeys(1)))
    expect(over[2]).toBe(false)
    expect(over[3]).toMatch(/^restricted: too-many-held: /)
    await f.annStillIn()
    // Ann's own revocation still lands at once and takes effect.
    const annConn = await f.t.connect()
    expect((await annConn.auth(f.t.url, f.ann.sk))[2]).toBe(true)
    const cut = f.revoke([f.malloryLaptop.pk], f.ann.sk)
    expect(await publish(annConn, cut)).toEqual(['OK', cut.id, true, ''])
    expect((await f.malloryConn.waitClosed()).code).toBeGreaterThan(0)
  })

  it('refuses a revocation naming more targets than maxRevocationTargets, whatever they are', async () => {
    const f = await fleet()
    // Each target is parsed and judged by every hub and node it reaches, kept or refused: one
    // of 999 keys cost a hub ~4 ms of its main thread, so the count is refused before any is read.
    for (const keys of [
      randomKeys(maxRevocationTargets + 1),
      Array<string>(maxRevocationTargets + 1).fill(f.annLaptop.pk),
    ]) {
      const r = await publish(f.malloryConn, f.revoke(keys))
      expect(r[2]).toBe(false)
      expect(r[3]).toMatch(/^invalid: .*at most 256 targets/)
    }
    const most = await publish(f.malloryConn, f.revoke(randomKeys(maxRevocationTargets)))
    expect(most[3]).toMatch(/^held: /)
    await f.annStillIn()
  })

  it('counts held revocations inside the person’s quota; a revocation that takes effect is not held back', async () => {
    const f = await fleet({ quotaEvents: 3 })
    const answers: unknown[] = []
    for (let i = 0; i < 5; i++)
      answers.push((await publish(f.malloryConn, f.revoke(randomKeys(1))))[3])
    expect(answers.slice(0, 3)).toEqual(Array(3).fill(expect.stringMatching(/^held: /)))
    expect(answers[3]).toMatch(/^rate-limited: quota: /)
    await f.annStillIn()
    // Mallory's own device grant is hers to end, quota or not: it takes effect.
    const malloryConn = await f.t.connect()
    expect((await malloryConn.auth(f.t.url, f.mallory.sk))[2]).toBe(true)
    const cut = f.revoke([f.malloryLaptop.pk], f.mallory.sk)
    expect(await publish(malloryConn, cut)).toEqual(['OK', cut.id, true, ''])
  })
})
