import type { NostrEvent } from '../events/event.js'
import type { Connection } from './connection.js'
import {
  firstRefusal,
  rejectAuth,
  rejectAuthAfterSignature,
  rejectAuthFrame,
  signatureRefusal,
  type AuthArrival,
} from './refusals.js'

/**
 * NIP-42 AUTH. What is cheap is checked first (attempts, challenge, relay URL, time, membership
 * of the key), so a stranger cannot make the hub check signatures; only then the signature.
 */
export function onAuth(conn: Connection, value: unknown): void {
  const { ctx } = conn
  conn.authAttempts++
  const tooMany = firstRefusal(rejectAuthFrame, { attempts: conn.authAttempts, limits: ctx.limits })
  if (tooMany !== undefined) {
    const id = (value as { id?: unknown } | null)?.id
    conn.ok(typeof id === 'string' ? id : '', false, tooMany)
    conn.end()
    conn.ws.close(1008, 'too many AUTH attempts')
    return
  }
  const event = conn.parseOrRefuse(value)
  if (event === undefined) return
  const refused = firstRefusal(rejectAuth, arrival(conn, event))
  if (refused !== undefined) {
    conn.ok(event.id, false, refused)
    return
  }
  // It names a member: while its signature is checked, strangers' arrivals cannot evict it.
  conn.verify(event, JSON.stringify(event), (result) => {
    const again =
      result === 'ok'
        ? firstRefusal(rejectAuthAfterSignature, arrival(conn, event))
        : signatureRefusal(result)
    if (again !== undefined) {
      ctx.admission.authenticating(conn.socket, false)
      conn.ok(event.id, false, again)
      return
    }
    if (conn.countedAs === undefined) {
      // Its first member key: the connection counts toward that person's cap from now on.
      const person = personCounted(conn, event)
      ctx.perPerson.connections.set(person, (ctx.perPerson.connections.get(person) ?? 0) + 1)
      conn.countedAs = person
    }
    conn.authed.add(event.pubkey)
    ctx.admission.admit(conn.socket)
    conn.ok(event.id, true, '')
  })
  ctx.admission.authenticating(conn.socket, true)
}

/** What the AUTH lists ask, now. */
function arrival(conn: Connection, event: NostrEvent): AuthArrival {
  const { ctx } = conn
  return {
    event,
    challenge: conn.challenge,
    relayUrls: ctx.relayUrls,
    now: ctx.now(),
    grants: ctx.grants,
    verifying: conn.verifying,
    personHolds: () =>
      conn.countedAs === undefined
        ? (ctx.perPerson.connections.get(personCounted(conn, event)) ?? 0)
        : undefined,
    limits: ctx.limits,
  }
}

/** The person whose cap a connection authenticated as `event.pubkey` counts toward. */
function personCounted(conn: Connection, event: NostrEvent): string {
  return conn.personOfKey(event.pubkey, conn.ctx.now()) ?? event.pubkey
}
