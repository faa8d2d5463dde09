import { generateSecretKey } from 'nostr-tools/pure'
import { computeEventId, signEvent, type NostrEvent } from '../../src/events/event.js'

/** Valid events whose serialization exercises NIP-01's escaping, and broken copies of them. */
export function vectors(): {
  name: string
  event: NostrEvent
  expect: 'ok' | 'bad-id' | 'bad-sig'
}[] {
  const sk = generateSecretKey()
  const contents = [
    'plain',
    'quotes " and \\ backslash',
    'line\nbreak\ttab\rreturn\b\f',
    'control \u0001\u001f and DEL \u007f',
    'unicode 🚀 ünïcödé 日本語 \u2028\u2029',
    '',
  ]
  const out: { name: string; event: NostrEvent; expect: 'ok' | 'bad-id' | 'bad-sig' }[] = []
  contents.forEach((content, i) => {
    const e = signEvent(
      {
        kind: i === 0 ? 9 : 1,
        created_at: 1_800_000_000 + i,
        tags: [
          ['h', 'ops'],
          ['p', 'a'.repeat(64), '', 'mention'],
          ['x', content],
        ],
        content,
      },
      sk,
    )
    out.push({ name: `valid #${i}`, event: e, expect: 'ok' })
    out.push({
      name: `content changed #${i}`,
      event: { ...e, content: `${content}!` },
      expect: 'bad-id',
    })
  })
  const base = out[0]!.event
  const flipped = (hex: string, at: number) =>
    hex.slice(0, at) + (hex[at] === '0' ? '1' : '0') + hex.slice(at + 1)
  out.push({
    name: 'signature bit flipped',
    event: { ...base, sig: flipped(base.sig, 10) },
    expect: 'bad-sig',
  })
  out.push({
    name: 'id of another event',
    event: { ...base, id: out[2]!.event.id },
    expect: 'bad-id',
  })
  const other = signEvent(
    { kind: 9, created_at: base.created_at, tags: base.tags, content: base.content },
    generateSecretKey(),
  )
  out.push({
    name: "another key's signature",
    event: { ...base, sig: other.sig },
    expect: 'bad-sig',
  })
  out.push({ name: 'zero signature', event: { ...base, sig: '0'.repeat(128) }, expect: 'bad-sig' })
  // x = p (the field prime) is not a valid x-only key; the id is recomputed so only the key is bad.
  const badKey = signEvent({ kind: 9, created_at: 1, tags: [], content: 'k' }, sk)
  const p = 'fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2f'
  const offCurve = { ...badKey, pubkey: p }
  out.push({
    name: 'pubkey not on the curve',
    event: { ...offCurve, id: idOf(offCurve) },
    expect: 'bad-sig',
  })
  return out
}

const idOf = (e: NostrEvent) => computeEventId(e)
