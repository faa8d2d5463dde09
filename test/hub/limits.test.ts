import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { publicKeyOf, signEvent, type NostrEvent } from '../../src/events/event.js'
import type { GrantSpec } from '../../src/grants/grant.js'
import { newSecret, signTestGrant } from '../helpers/secrets.js'
import { makeRevocation } from '../../src/grants/revocation.js'
import { startHub } from '../../src/hub/server.js'
import { startTestHub, type TestHub } from '../helpers/hub.js'
import { RawClient } from '../helpers/raw-client.js'

const now = () => Math.floor(Date.now() / 1000)

async function publish(c: RawClient, e: NostrEvent) {
  c.send(['EVENT', e])
  return c.ok(e.id)
}

/** Publishes `events` at once and returns the answers. */
async function burst(c: RawClient, events: NostrEvent[]) {
  for (const e of events) c.send(['EVENT', e])
  return Promise.all(events.map((e) => c.ok(e.id)))
}

const chat = (sk: Uint8Array, content: string) =>
  signEvent({ kind: 9, created_at: now(), tags: [], content }, sk)

/** A second person (owner grant, deleg) with a device and `agents` agent keys, all granted. */
async function person(t: TestHub, agents: number) {
  const founder = await t.member()
  const ownerSk = newSecret()
  const deviceSk = newSecret()
  const agentSks = Array.from({ length: agents }, () => newSecret())
  const g = (spec: Omit<GrantSpec, 'fleet' | 'proof'>, sk: Uint8Array) =>
    signTestGrant({ ...spec, fleet: t.owner }, sk, now())
  const ownerGrant = g({ subject: publicKeyOf(ownerSk), role: 'owner' }, t.ownerSk)
  const deviceGrant = g(
    { subject: publicKeyOf(deviceSk), role: 'device', parent: ownerGrant.id, deleg: true },
    ownerSk,
  )
  expect((await publish(founder, ownerGrant))[2]).toBe(true)
  expect((await publish(founder, deviceGrant))[2]).toBe(true)
  for (const sk of agentSks) {
    const grant = g({ subject: publicKeyOf(sk), role: 'agent', parent: deviceGrant.id }, deviceSk)
    expect((await publish(founder, grant))[2]).toBe(true)
  }
  return { founder, ownerSk, deviceSk, agentSks, ownerGrant }
}

describe('rate limits by person', () => {
  it('gives all of a person’s keys one bucket: eight agent keys get no more than one', async () => {
    const t = await startTestHub({
      limits: { eventsPerSecond: 1, eventBurst: 10, hubEventBurst: 10_000 },
    })
    const p = await person(t, 8)
    const events = p.agentSks.flatMap((sk, i) => [0, 1].map((j) => chat(sk, `agent ${i} ${j}`)))
    const answers = await burst(p.founder, events)
    expect(answers.filter((f) => f[2] === true)).toHaveLength(10)
    expect(new Set(answers.filter((f) => f[2] === false).map((f) => f[3]))).toEqual(
      new Set([
        "rate-limited: person: more than 1 events/s from this person's keys together; slow down",
      ]),
    )
    // The founder is another person, with a bucket of its own.
    expect((await publish(p.founder, t.sign({ content: 'founder' })))[2]).toBe(true)
  })

  it('has a bucket for the whole hub, and says so', async () => {
    const t = await startTestHub({
      limits: { eventsPerSecond: 100, eventBurst: 100, hubEventsPerSecond: 1, hubEventBurst: 5 },
    })
    const p = await person(t, 1)
    const mine = Array.from({ length: 3 }, (_, i) => t.sign({ content: `founder ${i}` }))
    const theirs = Array.from({ length: 3 }, (_, i) => chat(p.agentSks[0]!, `agent ${i}`))
    const answers = await burst(p.founder, [...mine, ...theirs])
    expect(answers.filter((f) => f[2] === true)).toHaveLength(5)
    expect(answers.filter((f) => f[2] === false).map((f) => f[3])).toEqual([
      'rate-limited: hub: more than 1 events/s on this hub from everyone; try again shortly',
    ])
  })

  it('counts an event with many tags as the index rows it makes: 1 token plus 1 per 2 tags past 10', async () => {
    const t = await startTestHub({
      limits: { eventsPerSecond: 1, eventBurst: 250, hubEventBurst: 10_000 },
    })
    const p = await person(t, 1)
    const agent = p.agentSks[0]!
    // 200 p tags: 200 rows in the tag index, 96 tokens. Before, it cost what a plain message
    // does, so a person's 100 events/s of 1000 tags each held a hub's main thread most of every second.
    const heavy = (i: number) =>
      signEvent(
        {
          kind: 9,
          created_at: now(),
          tags: Array.from({ length: 200 }, (_, j) => [
            'p',
            (i * 1000 + j).toString(16).padStart(64, '0'),
          ]),
          content: `heavy ${i}`,
        },
        agent,
      )
    const answers = await burst(p.founder, [heavy(0), heavy(1), heavy(2)])
    expect(answers.map((f) => f[2])).toEqual([true, true, false])
    expect(answers[2]![3]).toBe(
      "rate-limited: person: more than 1 events/s from this person's keys together (this event counts 96: 1 + 1 per 2 tags past the first 10); slow down",
    )
    // What is left of the bucket (250 - 192) still takes a plain message.
    expect((await publish(p.founder, chat(agent, 'plain')))[2]).toBe(true)
  })

  it('refuses a person past their rate before checking the signature, and spends nobody’s tokens on a forgery', async () => {
    const t = await startTestHub({
      limits: { eventsPerSecond: 1, eventBurst: 2, hubEventBurst: 10_000 },
    })
    const p = await person(t, 1)
    const agent = p.agentSks[0]!
    expect((await burst(p.founder, [chat(agent, 'a'), chat(agent, 'b')])).map((f) => f[2])).toEqual(
      [true, true],
    )
    // Its bucket is empty: the next is refused as over the rate without its signature being
    // checked (a broken signature still gets the rate's refusal). Before, the hub verified each
    // such event only to refuse it after.
    const broken = { ...chat(agent, 'c'), sig: 'ab'.repeat(64) }
    expect((await publish(p.founder, broken))[3]).toMatch(/^rate-limited: person: /)
    // A forgery naming another person's key takes nothing from that person's bucket.
    const forged = { ...t.sign({ content: 'not the founder' }), sig: 'ab'.repeat(64) }
    expect((await publish(p.founder, forged))[3]).toMatch(/^invalid: /)
    expect(
      (await burst(p.founder, [t.sign({ content: '1' }), t.sign({ content: '2' })])).map(
        (f) => f[2],
      ),
    ).toEqual([true, true])
  })

  it('still takes a revocation from a person whose agent floods their bucket', async () => {
    const t = await startTestHub({ limits: { eventsPerSecond: 1, eventBurst: 5 } })
    const p = await person(t, 1)
    const rogue = p.agentSks[0]!
    const flood = Array.from({ length: 20 }, (_, i) => chat(rogue, `flood ${i}`))
    const answers = await burst(p.founder, flood)
    expect(answers.filter((f) => f[2] === false).length).toBeGreaterThan(0)
    // The person's own chat is refused now (their bucket is empty)...
    expect((await publish(p.founder, chat(p.ownerSk, 'me')))[3]).toMatch(/^rate-limited: person:/)
    // ...but their revocation of the rogue agent is accepted, and takes effect.
    const revocation = signEvent(
      makeRevocation({ fleet: t.owner, keys: [publicKeyOf(rogue)] }, now()),
      p.ownerSk,
    )
    expect(await publish(p.founder, revocation)).toEqual(['OK', revocation.id, true, ''])
    expect((await publish(p.founder, chat(rogue, 'after')))[3]).toMatch(/^restricted: revoked/)
  })
})

describe('storage quota by person', () => {
  it('refuses a person past their quota, naming it, counts all their keys, and survives a restart', async () => {
    const t = await startTestHub({ limits: { quotaEvents: 6 } })
    const p = await person(t, 2)
    const events = [
      ...[0, 1, 2].map((i) => chat(p.agentSks[0]!, `a ${i}`)),
      ...[0, 1, 2].map((i) => chat(p.agentSks[1]!, `b ${i}`)),
      chat(p.deviceSk, 'one too many'),
    ]
    const answers = []
    for (const e of events) answers.push(await publish(p.founder, e))
    expect(answers.slice(0, 6).every((f) => f[2] === true)).toBe(true)
    expect(answers[6]).toEqual([
      'OK',
      events[6]!.id,
      false,
      "rate-limited: quota: this person stores 6 events, their quota (quota_events_per_person 6); ask the hub's operator to raise it",
    ])
    // Grants and revocations are never refused by quota: the person can still manage keys.
    const extra = newSecret()
    const grant = signTestGrant(
      { subject: publicKeyOf(extra), role: 'device', fleet: t.owner, parent: p.ownerGrant.id },
      p.ownerSk,
      now(),
    )
    expect((await publish(p.founder, grant))[2]).toBe(true)
    const revocation = signEvent(
      makeRevocation({ fleet: t.owner, keys: [publicKeyOf(extra)] }, now()),
      p.ownerSk,
    )
    expect((await publish(p.founder, revocation))[2]).toBe(true)
    // Another person is not affected.
    expect((await publish(p.founder, t.sign({ content: 'founder' })))[2]).toBe(true)

    // The count lives in hub.db: a restarted hub refuses the same.
    const dbPath = join(t.dir, 'hub.db')
    await t.hub.close()
    const again = await startHub({
      port: 0,
      dbPath,
      founder: t.owner,
      verifyWorkers: 0,
      limits: { quotaEvents: 6 },
    })
    try {
      const c = await RawClient.connect(again.url)
      expect((await c.auth(again.url, t.ownerSk))[2]).toBe(true)
      const late = chat(p.agentSks[1]!, 'after restart')
      // Six events and the revocation: revocations count in usage (a held one would be
      // refused past quota; this one took effect, so it was accepted over it).
      expect((await publish(c, late))[3]).toMatch(
        /^rate-limited: quota: this person stores 7 events/,
      )
      c.close()
    } finally {
      await again.close()
    }
  })

  it('counts bytes too', async () => {
    const t = await startTestHub({ limits: { quotaBytes: 2000 } })
    const c = await t.member()
    expect((await publish(c, t.sign({ content: 'x'.repeat(1000) })))[2]).toBe(true)
    const second = t.sign({ content: 'y'.repeat(1000) })
    expect((await publish(c, second))[3]).toMatch(
      /^rate-limited: quota: this person stores \d+ bytes and this event needs \d+ more, over their quota \(quota_bytes_per_person 2000\)/,
    )
  })

  it('publishes the limits and the quota in NIP-11', async () => {
    const t = await startTestHub()
    const res = await fetch(t.url.replace('ws://', 'http://'), {
      headers: { accept: 'application/nostr+json' },
    })
    const info = (await res.json()) as { kith: Record<string, unknown> }
    expect(info.kith).toMatchObject({
      events_per_second_per_person: 100,
      event_burst_per_person: 1000,
      events_per_second_per_hub: 2000,
      event_burst_per_hub: 20_000,
      quota_events_per_person: 1_000_000,
      quota_bytes_per_person: 512 * 1024 * 1024,
      quota_exempt_kinds: [4140, 4141, 34140],
      held_revocation_targets_per_signer: 1000,
      max_unread_bytes: 8 * 1024 * 1024,
      max_auth_attempts: 8,
      max_pending_verifications: 256,
      auth_deadline_seconds: 15,
      max_unauthenticated_per_address: 32,
      max_unauthenticated: 256,
      negentropy_max_items: 500_000,
      negentropy_slice_items: 256,
      negentropy_slice_ms: 1,
    })
  })
})
