// Writes test/vectors/grants.json: frozen grant/revocation vectors for nips/kith-grants.md.
// Run once (`node scripts/make-grant-vectors.js`) after `npm run build`; the tests load the file and never
// regenerate it, so a change in the verifier's behaviour shows up as a failing vector.
// Keys are derived from fixed labels so pubkeys are stable; signatures carry BIP-340 aux randomness.
import { writeFileSync } from 'node:fs'
import { sha256 } from '@noble/hashes/sha2.js'
import { utf8ToBytes } from '@noble/hashes/utils.js'
import { publicKeyOf, signEvent } from '../dist/events/event.js'
import { makeGrant, signGrant, signGrantProof } from '../dist/grants/grant.js'
import { makeRevocation } from '../dist/grants/revocation.js'

const names = ['F', 'O', 'O2', 'O3', 'O4', 'O5', 'O6', 'D', 'D2', 'A', 'A2', 'S', 'X']
const sk = Object.fromEntries(names.map((n) => [n, sha256(utf8ToBytes(`kith-grant-vector-${n}`))]))
const pk = Object.fromEntries(names.map((n) => [n, publicKeyOf(sk[n])]))
const now = 1_800_000_000
const F = pk.F

/** A grant from `by` to `to` with `to`'s proof; `parent` is the issuer's own grant event. */
function grant(by, to, role, extra = {}, parent) {
  const spec = { subject: pk[to], role, fleet: F, ...extra }
  if (parent) spec.parent = parent.id
  return signGrant(spec, sk[by], sk[to], now - 100)
}
/** A grant whose proof is `proof` (forged, moved or missing), signed by `by`. */
function grantWithProof(by, to, role, proof, parent) {
  const spec = { subject: pk[to], role, fleet: F, proof }
  if (parent) spec.parent = parent.id
  const template = makeGrant(spec, now - 100)
  if (proof === undefined) template.tags = template.tags.filter((t) => t[0] !== 'proof')
  return signEvent(template, sk[by])
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
const held = { held: true }
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
  const other = signGrant({ subject: pk.D, role: 'device', fleet: pk.X }, sk.X, sk.D, now - 100)
  const bad = signEvent(
    {
      kind: 4140,
      created_at: now,
      tags: [
        ['p', pk.D],
        ['role', 'admin'],
        ['fleet', F],
        ['proof', signGrantProof(sk.D, pk.F, 'device')],
      ],
      content: '',
    },
    sk.F,
  )
  const delegAgent = grant('F', 'A', 'agent', { deleg: true })
  const emptyExp = grant('F', 'D2', 'device')
  const withTag = (g, by, tag) =>
    signEvent({ kind: 4140, created_at: g.created_at, tags: [...g.tags, tag], content: '' }, sk[by])
  add('wrong fleet and malformed grants', [
    [other, rej('wrong-fleet')],
    [bad, rej('malformed')],
    [delegAgent, rej('malformed')],
    // A tag that is present carries its value: ["exp"] alone is not "no expiry".
    [withTag(emptyExp, 'F', ['exp']), rej('malformed')],
    [withTag(emptyExp, 'F', ['nbf', '']), rej('malformed')],
    [withTag(emptyExp, 'F', ['kind', '09']), rej('malformed')],
    [withTag(emptyExp, 'F', ['channel', 'Not A Channel']), rej('malformed')],
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
      // D2 stands above no grant of D (kept: a grant of D from D2 could still come, so it is
      // held); A could never stand above grant d, whose chain never changes: refused.
      [revoke('D2', { keys: ['D'] }), held],
      [revoke('A', { grants: [d] }), { rejected: 'no-authority' }],
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
    'the founder cannot be revoked; unknown targets are held',
    [
      [o, ok],
      [revoke('O', { keys: ['F'] }), rej('no-authority')],
      [revoke('O', { keys: ['S'] }), held],
      [revoke('F', { grants: [{ id: 'e'.repeat(64) }] }), held],
      [revoke('F', { keys: ['O'] }, pk.X), rej('wrong-fleet')],
      [revoke('S', { keys: ['O'] }), rej('not-a-member')],
    ],
    [{ key: 'O', expect: 'ok' }],
  )
}
{
  const o = grant('F', 'O', 'owner')
  const d = grant('O', 'D', 'device', { deleg: true }, o)
  add(
    'what a revoked issuer grants is accepted and revoked with it',
    [
      [o, ok],
      [d, ok],
      [revoke('F', { keys: ['O'] }), ok],
      [grant('O', 'D2', 'device', {}, o), ok],
      [grant('D', 'A', 'agent', {}, d), ok],
    ],
    [
      { key: 'D2', expect: 'revoked' },
      { key: 'A', expect: 'revoked' },
    ],
  )
}
// Proofs: a key belongs to whoever it consented to (issue: authority belongs to a person).
{
  const o = grant('F', 'O', 'owner')
  const d = grant('F', 'D', 'device', { deleg: true })
  const proofForF = signGrantProof(sk.D, pk.F, 'device')
  add(
    "a grant needs its subject's proof for this issuer and role",
    [
      [o, ok],
      [d, ok],
      // O grants the founder's device D: without D's consent there is no valid proof.
      [
        grantWithProof('O', 'D', 'device', signGrantProof(sk.O, pk.O, 'device'), o),
        rej('bad-proof'),
      ],
      // D's consent to the founder, moved onto O's grant, names the wrong issuer.
      [grantWithProof('O', 'D', 'device', proofForF, o), rej('bad-proof')],
      [
        grantWithProof('O', 'D', 'agent', signGrantProof(sk.D, pk.O, 'device'), o),
        rej('bad-proof'),
      ],
      [grantWithProof('O', 'D', 'device', undefined, o), rej('malformed')],
      // Its p revocation of D is kept but revokes nothing: O stands above none of D's grants.
      [revoke('O', { keys: ['D'] }), held],
    ],
    [
      { key: 'D', kind: 9, expect: 'ok' },
      { key: 'O', expect: 'ok' },
    ],
  )
}
{
  const o = grant('F', 'O', 'owner', { deleg: true })
  const o2 = grant('F', 'O2', 'owner')
  const viaO = grant('O', 'A', 'agent', {}, o)
  const viaO2 = grant('O2', 'A', 'agent', {}, o2)
  add(
    'a p revocation ends only the grants its signer stands above',
    [
      [o, ok],
      [o2, ok],
      [viaO, ok],
      [viaO2, ok],
      [revoke('O', { keys: ['A'] }), ok],
      // A new grant from O is below O, so O's revocation ends it too; A's grant from O2 is
      // O2's business and stays.
      [grant('O', 'A', 'agent', { kinds: [9] }, o), ok],
    ],
    [
      { key: 'A', kind: 1, expect: 'ok' },
      { key: 'A', kind: 9, expect: 'ok' },
    ],
  )
  add(
    "the founder's p revocation ends every grant of a key, now and later",
    [
      [o, ok],
      [o2, ok],
      [viaO, ok],
      [viaO2, ok],
      [revoke('F', { keys: ['A'] }), ok],
      [grant('O2', 'A', 'agent', { kinds: [9] }, o2), ok],
    ],
    [{ key: 'A', expect: 'revoked' }],
  )
}
{
  const o = grant('F', 'O', 'owner', { deleg: true })
  const o2 = grant('O', 'O2', 'owner', {}, o)
  const d2 = grant('O2', 'D2', 'device', {}, o2)
  const readmit = grant('F', 'O2', 'owner', { kinds: [0, 9, 4140, 4141] })
  add(
    "a removed admin's revocation never reaches past the grants it stood above",
    [
      [o, ok],
      [o2, ok],
      [d2, ok],
      [revoke('F', { keys: ['O'] }), ok],
      [readmit, ok],
      // O, removed, revokes O2, whom the founder has re-admitted: only O's old grant was O's.
      [revoke('O', { keys: ['O2'] }), ok],
    ],
    [
      { key: 'O2', kind: 9, expect: 'ok' },
      { key: 'D2', expect: 'revoked' },
      { key: 'O', expect: 'revoked' },
    ],
  )
}
{
  const o = grant('F', 'O', 'owner', { kinds: [0, 9, 4140] })
  const d = grant('O', 'D', 'device', { deleg: true }, o)
  add(
    'an issuer whose kinds leave out 4141 revokes nothing',
    [
      [o, ok],
      [d, ok],
      [revoke('O', { keys: ['D'] }), held],
    ],
    [{ key: 'D', expect: 'ok' }],
  )
}

const vectors = {
  description:
    'kith-grants/2 vectors: add each step in order to a fresh verifier for this founder (acceptance is structural: no clock), expect each result ("accepted", {"held": true} for a revocation that revokes nothing known, or {"rejected": code}), then each query (at `at`, default `now`). Codes are defined in nips/kith-grants.md.',
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
