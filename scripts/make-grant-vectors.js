// Writes test/vectors/grants.json: frozen grant/revocation vectors for nips/kith-grants.md.
// Run once (`node scripts/make-grant-vectors.js`) after `npm run build`; the tests load the file and never
// regenerate it, so a change in the verifier's behaviour shows up as a failing vector.
// Keys are derived from fixed labels so pubkeys are stable; signatures carry BIP-340 aux randomness.
import { writeFileSync } from 'node:fs'
import { sha256 } from '@noble/hashes/sha2.js'
import { utf8ToBytes } from '@noble/hashes/utils.js'
import { publicKeyOf, signEvent } from '../dist/events/event.js'
import { makeGrant } from '../dist/grants/grant.js'
import { makeRevocation } from '../dist/grants/revocation.js'

const names = ['F', 'O', 'O2', 'O3', 'O4', 'O5', 'O6', 'D', 'D2', 'A', 'A2', 'S', 'X']
const sk = Object.fromEntries(names.map((n) => [n, sha256(utf8ToBytes(`kith-grant-vector-${n}`))]))
const pk = Object.fromEntries(names.map((n) => [n, publicKeyOf(sk[n])]))
const now = 1_800_000_000
const F = pk.F

/** A grant from `by` to `to`; `parent` is the issuer's own grant event. */
function grant(by, to, role, extra = {}, parent) {
  const spec = { subject: pk[to], role, fleet: F, ...extra }
  if (parent) spec.parent = parent.id
  return signEvent(makeGrant(spec, now - 100), sk[by])
}
function revoke(by, { grants = [], keys = [] }, fleet = F) {
  return signEvent(
    makeRevocation(
      { fleet, grants: grants.map((g) => g.id), keys: keys.map((k) => pk[k]) },
      now - 50,
    ),
    sk[by],
  )
}
const ok = 'accepted'
const rej = (code) => ({ rejected: code })
const cases = []
const add = (name, steps, queries = []) =>
  cases.push({ name, steps: steps.map(([event, expect]) => ({ event, expect })), queries })

// Valid chains.
{
  const d = grant('F', 'D', 'device')
  add(
    'founder grants a device',
    [[d, ok]],
    [
      { key: 'D', kind: 9, channel: 'ops', expect: 'ok' },
      { key: 'S', expect: 'not-a-member' },
      { key: 'F', kind: 9, expect: 'ok' },
    ],
  )
}
{
  const o = grant('F', 'O', 'owner')
  const d = grant('O', 'D', 'device', { deleg: true }, o)
  const a = grant('D', 'A', 'agent', {}, d)
  add(
    'founder → owner → device (deleg) → agent',
    [
      [o, ok],
      [d, ok],
      [a, ok],
    ],
    [
      { key: 'A', kind: 9, channel: 'ops', expect: 'ok' },
      { key: 'D', expect: 'ok' },
    ],
  )
}
{
  const o = grant('F', 'O', 'owner')
  const a = grant('O', 'A', 'agent', {}, o)
  add(
    'owner → agent',
    [
      [o, ok],
      [a, ok],
    ],
    [{ key: 'A', kind: 9, expect: 'ok' }],
  )
}
{
  const o = grant('F', 'O', 'owner', { deleg: true })
  const o2 = grant('O', 'O2', 'owner', {}, o)
  const d2 = grant('O2', 'D2', 'device', {}, o2)
  add(
    'admin owner admits an owner, who enrolls a device',
    [
      [o, ok],
      [o2, ok],
      [d2, ok],
    ],
    [{ key: 'D2', expect: 'ok' }],
  )
}
{
  const o = grant('F', 'O', 'owner', { kinds: [0, 9, 4140, 4142], channels: ['ops', 'dev'] })
  const a = grant('O', 'A', 'agent', { kinds: [9], channels: ['ops'] }, o)
  add(
    'caps narrow along the chain',
    [
      [o, ok],
      [a, ok],
    ],
    [
      { key: 'A', kind: 9, channel: 'ops', expect: 'ok' },
      { key: 'A', kind: 9, expect: 'ok' },
      { key: 'A', kind: 9, channel: 'dev', expect: 'channel-not-allowed' },
      { key: 'A', kind: 1, channel: 'ops', expect: 'kind-not-allowed' },
      { key: 'O', kind: 4142, channel: 'dev', expect: 'ok' },
      { key: 'O', kind: 1, expect: 'kind-not-allowed' },
    ],
  )
}
{
  const o = grant('F', 'O', 'owner', { kinds: [9, 4140] })
  const a = grant('O', 'A', 'agent', {}, o)
  add(
    'absent caps inherit the parent',
    [
      [o, ok],
      [a, ok],
    ],
    [
      { key: 'A', kind: 9, expect: 'ok' },
      { key: 'A', kind: 1, expect: 'kind-not-allowed' },
    ],
  )
}
{
  const o = grant('F', 'O', 'owner', { nbf: now - 1000, exp: now + 1000 })
  const a = grant('O', 'A', 'agent', {}, o)
  add(
    'window and ±300 s skew edges',
    [
      [o, ok],
      [a, ok],
    ],
    [
      { key: 'A', at: now, expect: 'ok' },
      { key: 'A', at: now + 1300, expect: 'ok' },
      { key: 'A', at: now + 1301, expect: 'expired' },
      { key: 'A', at: now - 1300, expect: 'ok' },
      { key: 'A', at: now - 1301, expect: 'not-yet-valid' },
    ],
  )
}
{
  const o = grant('F', 'O', 'owner', { kinds: [9] })
  add('kind caps bind grants too: no 4140, no granting', [
    [o, ok],
    [grant('O', 'A', 'agent', {}, o), rej('kind-not-allowed')],
  ])
}
// Invalid grants, each with its reason code.
{
  const d = grant('F', 'D', 'device')
  const forged = { ...d, sig: grant('X', 'D', 'device').sig }
  add('forged signature', [[forged, rej('bad-signature')]], [{ key: 'D', expect: 'not-a-member' }])
}
{
  const d = grant('F', 'D', 'device')
  const a = grant('D', 'A', 'agent', {}, d)
  const o = grant('F', 'O', 'owner')
  const o2 = grant('O', 'O2', 'owner', {}, o)
  const a2 = grant('F', 'A2', 'agent')
  const aa = grant('A2', 'A', 'agent', {}, a2)
  const dd = grant('O', 'D2', 'device', {}, o)
  const dd2 = grant('D2', 'D', 'device', { deleg: true }, dd)
  add(
    'issuers without authority',
    [
      [d, ok],
      [a, rej('no-authority')],
      [o, ok],
      [o2, rej('no-authority')],
      [a2, ok],
      [aa, rej('no-authority')],
      [dd, ok],
      [dd2, rej('no-authority')],
    ],
    [
      { key: 'A', expect: 'not-a-member' },
      { key: 'O2', expect: 'not-a-member' },
    ],
  )
}
{
  const d = grant('F', 'D', 'device')
  const orphan = grant('S', 'A', 'agent')
  const stolen = grant('S', 'A', 'agent', {}, d)
  const unknown = grant('D', 'A', 'agent', { parent: 'f'.repeat(64) })
  add('missing, mismatched and unknown parents', [
    [d, ok],
    [orphan, rej('missing-parent')],
    [stolen, rej('parent-mismatch')],
    [unknown, rej('unknown-parent')],
  ])
}
{
  const o = grant('F', 'O', 'owner', {
    kinds: [9, 4140],
    channels: ['ops'],
    nbf: now - 1000,
    exp: now + 1000,
  })
  add(
    'a child wider than its parent is rejected, never clamped',
    [
      [o, ok],
      [grant('O', 'A', 'agent', { kinds: [9, 1] }, o), rej('wider-kinds')],
      [grant('O', 'A', 'agent', { channels: ['ops', 'dev'] }, o), rej('wider-channels')],
      [grant('O', 'A', 'agent', { exp: now + 2000 }, o), rej('wider-window')],
      [grant('O', 'A', 'agent', { nbf: now - 2000 }, o), rej('wider-window')],
      [
        grant(
          'O',
          'A',
          'agent',
          { kinds: [9], channels: ['ops'], nbf: now - 10, exp: now + 10 },
          o,
        ),
        ok,
      ],
    ],
    [
      { key: 'A', at: now + 311, expect: 'expired' },
      { key: 'A', kind: 9, channel: 'ops', expect: 'ok' },
    ],
  )
}
{
  add(
    'expired and not-yet-valid grants',
    [
      [grant('F', 'D', 'device', { exp: now - 1000 }), ok],
      [grant('F', 'D2', 'device', { nbf: now + 1000 }), ok],
    ],
    [
      { key: 'D', expect: 'expired' },
      { key: 'D2', expect: 'not-yet-valid' },
      { key: 'D2', at: now + 1000, expect: 'ok' },
    ],
  )
}
{
  const o1 = grant('F', 'O', 'owner', { deleg: true })
  const o2 = grant('O', 'O2', 'owner', { deleg: true }, o1)
  const o3 = grant('O2', 'O3', 'owner', { deleg: true }, o2)
  const o4 = grant('O3', 'O4', 'owner', { deleg: true }, o3)
  const o5 = grant('O4', 'O5', 'owner', { deleg: true }, o4)
  const o6 = grant('O5', 'O6', 'owner', {}, o5)
  const d = grant('O6', 'D', 'device', {}, o6)
  add(
    'chains longer than 6 grants are too deep',
    [
      [o1, ok],
      [o2, ok],
      [o3, ok],
      [o4, ok],
      [o5, ok],
      [o6, ok],
      [d, rej('too-deep')],
    ],
    [
      { key: 'O6', expect: 'ok' },
      { key: 'D', expect: 'not-a-member' },
    ],
  )
}
{
  const o1 = grant('F', 'O', 'owner', { deleg: true })
  const o2 = grant('O', 'O2', 'owner', { deleg: true }, o1)
  add('cycles and self-grants', [
    [o1, ok],
    [o2, ok],
    [grant('O2', 'O', 'owner', {}, o2), rej('cycle')],
    [grant('O2', 'F', 'owner', {}, o2), rej('cycle')],
    [grant('O', 'O', 'device', {}, o1), rej('self-grant')],
  ])
}
{
  const other = signEvent(
    makeGrant({ subject: pk.D, role: 'device', fleet: pk.X }, now - 100),
    sk.X,
  )
  const bad = signEvent(
    {
      kind: 4140,
      created_at: now,
      tags: [
        ['p', pk.D],
        ['role', 'admin'],
        ['fleet', F],
      ],
      content: '',
    },
    sk.F,
  )
  const delegAgent = grant('F', 'A', 'agent', { deleg: true })
  add('wrong fleet and malformed grants', [
    [other, rej('wrong-fleet')],
    [bad, rej('malformed')],
    [delegAgent, rej('malformed')],
  ])
}
// Revocation.
{
  const o = grant('F', 'O', 'owner')
  const d = grant('O', 'D', 'device', { deleg: true }, o)
  const a = grant('D', 'A', 'agent', {}, d)
  add(
    'revoking a grant cascades to everything beneath',
    [
      [o, ok],
      [d, ok],
      [a, ok],
      [revoke('F', { grants: [o] }), ok],
    ],
    [
      { key: 'O', expect: 'revoked' },
      { key: 'D', expect: 'revoked' },
      { key: 'A', expect: 'revoked' },
    ],
  )
}
{
  const o = grant('F', 'O', 'owner')
  const d = grant('O', 'D', 'device', { deleg: true }, o)
  const a = grant('D', 'A', 'agent', {}, d)
  const d2 = grant('O', 'D2', 'device', {}, o)
  add(
    'issuer revokes a grant; owner above revokes a key',
    [
      [o, ok],
      [d, ok],
      [a, ok],
      [d2, ok],
      [revoke('D2', { keys: ['D'] }), rej('no-authority')],
      [revoke('A', { grants: [d] }), rej('no-authority')],
      [revoke('O', { keys: ['A'] }), ok],
    ],
    [
      { key: 'A', expect: 'revoked' },
      { key: 'D', expect: 'ok' },
      { key: 'D2', expect: 'ok' },
    ],
  )
}
{
  const o = grant('F', 'O', 'owner')
  const a1 = grant('O', 'A', 'agent', {}, o)
  const a2 = grant('O', 'A', 'agent', { kinds: [9] }, o)
  const a3 = grant('O', 'A2', 'agent', {}, o)
  const a4 = grant('O', 'A2', 'agent', { kinds: [9] }, o)
  add(
    're-grant after revocation works only through a new grant, never for a revoked key',
    [
      [o, ok],
      [a1, ok],
      [revoke('O', { grants: [a1] }), ok],
      [a1, ok],
      [a3, ok],
      [revoke('O', { keys: ['A2'] }), ok],
      [a4, ok],
    ],
    [
      { key: 'A', expect: 'revoked' },
      { key: 'A2', expect: 'revoked' },
    ],
  )
  add(
    'a new grant restores a grant-revoked key',
    [
      [o, ok],
      [a1, ok],
      [revoke('O', { grants: [a1] }), ok],
      [a2, ok],
    ],
    [
      { key: 'A', kind: 9, expect: 'ok' },
      { key: 'A', kind: 1, expect: 'kind-not-allowed' },
    ],
  )
}
{
  const o = grant('F', 'O', 'owner')
  add(
    'the founder and unknown targets cannot be revoked',
    [
      [o, ok],
      [revoke('O', { keys: ['F'] }), rej('no-authority')],
      [revoke('O', { keys: ['S'] }), rej('unknown-target')],
      [revoke('F', { grants: [{ id: 'e'.repeat(64) }] }), rej('unknown-target')],
      [revoke('F', { keys: ['O'] }, pk.X), rej('wrong-fleet')],
    ],
    [{ key: 'O', expect: 'ok' }],
  )
}
{
  const o = grant('F', 'O', 'owner')
  const d = grant('O', 'D', 'device', { deleg: true }, o)
  add(
    'a revoked issuer can no longer grant',
    [
      [o, ok],
      [d, ok],
      [revoke('F', { keys: ['O'] }), ok],
      [grant('O', 'D2', 'device', {}, o), rej('revoked')],
      [grant('D', 'A', 'agent', {}, d), rej('revoked')],
    ],
    [{ key: 'D2', expect: 'not-a-member' }],
  )
}

const vectors = {
  description:
    'kith-grants/1 vectors: add each step in order to a fresh verifier for this founder at `now` (issuer authority checked at `now`), expect each result, then each query (at `at`, default `now`). Codes are defined in nips/kith-grants.md.',
  founder: F,
  now,
  maxDepth: 6,
  skewSeconds: 300,
  keys: pk,
  cases,
}
writeFileSync(
  new URL('../test/vectors/grants.json', import.meta.url),
  `${JSON.stringify(vectors, null, 2)}\n`,
)
console.log(`wrote ${cases.length} cases`)
