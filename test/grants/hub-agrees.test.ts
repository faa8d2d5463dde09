import { describe, expect, it } from 'vitest'
import { sha256 } from '@noble/hashes/sha2.js'
import { utf8ToBytes } from '@noble/hashes/utils.js'
import { signEvent } from '../../src/events/event.js'
import { startTestHub } from '../helpers/hub.js'
import { vectors } from './vectors.js'

/** The vector keys are derived from their labels (see scripts/make-grant-vectors.js). */
const secret = (label: string) => sha256(utf8ToBytes(`kith-grant-vector-${label}`))

describe('the hub decides every grant vector as the verifier does', () => {
  for (const c of vectors.cases) {
    it(c.name, async () => {
      let clock = vectors.now
      const t = await startTestHub({
        founder: vectors.founder,
        now: () => clock,
        limits: { eventsPerSecond: 0 },
      })
      const founder = await t.connect()
      expect((await founder.auth(t.url, secret('F'), clock))[2]).toBe(true)
      for (const [i, step] of c.steps.entries()) {
        founder.send(['EVENT', step.event])
        const ok = await founder.next((f) => f[0] === 'OK' && f[1] === step.event.id)
        // The hub answers "<prefix>: <code>: <reason>" (a bad signature: "invalid: bad signature").
        const message = String(ok[3])
        const code = message === 'invalid: bad signature' ? 'bad-signature' : message.split(': ')[1]
        const got =
          ok[2] !== true
            ? { rejected: code }
            : message.startsWith('held: ')
              ? { held: true }
              : 'accepted'
        expect({ step: i, got }).toEqual({ step: i, got: step.expect })
      }
      for (const q of c.queries) {
        clock = q.at ?? vectors.now
        const label = Object.entries(vectors.keys).find(([, pk]) => pk === vectors.keys[q.key])![0]
        let answer: unknown[]
        if (q.kind === undefined) {
          const client = await t.connect()
          answer = await client.auth(t.url, secret(label), clock)
        } else {
          const event = signEvent(
            {
              kind: q.kind,
              created_at: clock,
              tags: q.channel === undefined ? [] : [['h', q.channel]],
              content: `query ${Math.random()}`,
            },
            secret(label),
          )
          founder.send(['EVENT', event])
          answer = await founder.ok(event.id)
        }
        const got = answer[2] === true ? 'ok' : String(answer[3]).split(': ')[1]
        expect({ q, got }).toEqual({ q, got: q.expect })
      }
    })
  }
})
