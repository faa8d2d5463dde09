/**
 * Whose machine served the web app a browser is running (kith-pair/1, "Where the app comes
 * from"). A browser's device key lives in its origin's storage, so whoever serves that origin's
 * code can use the key: the app pairs into a person's fleet only when the page came from a
 * machine of that person. The server says who it is in a `kith-served-by` response header; an
 * honest app checks it against the pairing code's owner before it makes a key.
 */

/** What a server says of itself: a node of a person, or a hub (whose operator may be anyone). */
export interface ServedBy {
  role: 'node' | 'hub'
  /** The serving machine's person (owner pubkey, hex), when it has one. */
  owner?: string
  /** The serving machine's name in its fleet. */
  name?: string
}

export const servedByHeader = 'kith-served-by'

const hex64 = /^[0-9a-f]{64}$/

/** `role=node; owner=HEX; name=URI-ENCODED` (the header's value). */
export function formatServedBy(s: ServedBy): string {
  const parts = [`role=${s.role}`]
  if (s.owner !== undefined) parts.push(`owner=${s.owner}`)
  if (s.name !== undefined) parts.push(`name=${encodeURIComponent(s.name)}`)
  return parts.join('; ')
}

/** The header's value read back; undefined for an absent or malformed one (a server not Kith's). */
export function parseServedBy(value: string | null | undefined): ServedBy | undefined {
  if (value === null || value === undefined) return undefined
  const fields = new Map<string, string>()
  for (const part of value.split(';')) {
    const eq = part.indexOf('=')
    if (eq <= 0) return undefined
    fields.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim())
  }
  const role = fields.get('role')
  if (role !== 'node' && role !== 'hub') return undefined
  const owner = fields.get('owner')
  if (owner !== undefined && !hex64.test(owner)) return undefined
  let name: string | undefined
  const rawName = fields.get('name')
  if (rawName !== undefined) {
    try {
      name = decodeURIComponent(rawName).slice(0, 64)
    } catch {
      // A malformed escape: the name is not shown rather than shown wrong.
      name = undefined
    }
  }
  return {
    role,
    ...(owner === undefined ? {} : { owner }),
    ...(name === undefined ? {} : { name }),
  }
}

export type ServedByVerdict =
  | { ok: true; says: string }
  | { ok: false; says: string; why: 'unknown-server' | 'hub-of-unknown' | 'another-person' }

/**
 * May a browser running a page `servedBy` become a device of `owner`? Only when the page came
 * from a machine of that same person: a node with that owner, or a hub whose operator declared
 * that owner. `ownerLabel` names the owner in the text shown.
 */
export function servedByVerdict(
  servedBy: ServedBy | undefined,
  owner: string,
  ownerLabel: string,
): ServedByVerdict {
  const what = (s: ServedBy) =>
    `${s.role === 'node' ? 'the node' : 'the hub'}${s.name === undefined ? '' : ` ${s.name}`}`
  const advice =
    'Whoever runs the machine that serves this page can use the key this browser would keep here. ' +
    `Open the app from one of ${ownerLabel}'s own machines instead (kith open there, or kith up --web-host).`
  if (servedBy === undefined) {
    return {
      ok: false,
      why: 'unknown-server',
      says: `This page does not say which machine served it. ${advice}`,
    }
  }
  if (servedBy.owner === undefined) {
    return {
      ok: false,
      why: 'hub-of-unknown',
      says: `This page was served by ${what(servedBy)}, whose operator is not known. ${advice}`,
    }
  }
  if (servedBy.owner !== owner) {
    return {
      ok: false,
      why: 'another-person',
      says: `This page was served by ${what(servedBy)}, a machine of another person, not of ${ownerLabel}. ${advice}`,
    }
  }
  return {
    ok: true,
    says: `This page was served by ${what(servedBy)}, a machine of ${ownerLabel}.`,
  }
}
