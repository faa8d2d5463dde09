import { npubEncode } from 'nostr-tools/nip19'
import type { Who } from '../../../browser-core.js'

export function shortNpub(pubkey: string): string {
  const n = npubEncode(pubkey)
  return `${n.slice(0, 12)}…${n.slice(-4)}`
}

// Made once: a formatter is costly to make, and a channel shows hundreds of times.
const timeFormat = new Intl.DateTimeFormat([], { hour: '2-digit', minute: '2-digit' })
const dayFormat = new Intl.DateTimeFormat([], { weekday: 'short' })
const dateFormat = new Intl.DateTimeFormat([])

/** 14:05 today, "Mon 14:05" this week, else the date. */
export function when(seconds: number): string {
  const d = new Date(seconds * 1000)
  const now = new Date()
  const time = timeFormat.format(d)
  if (d.toDateString() === now.toDateString()) return time
  if (now.getTime() - d.getTime() < 6 * 86400_000) return `${dayFormat.format(d)} ${time}`
  return dateFormat.format(d)
}

/** "claude · agent of alice", "laptop · device", "bob" — whose a key is, always shown. */
export function roleLabel(w: Who): string {
  if (w.role === 'agent') return `agent${w.authorizedBy ? `, authorized by ${w.authorizedBy}` : ''}`
  if (w.role === 'device') return w.mine ? 'device' : `device of ${w.person ?? '?'}`
  if (w.role === 'person') return 'person'
  return 'not a member'
}

export function formatSas(sas: string): string {
  return sas.length === 6 ? `${sas.slice(0, 3)} ${sas.slice(3)}` : sas
}
