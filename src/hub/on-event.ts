import { toNostrMessage } from '../errors.js'
import type { NostrEvent } from '../events/event.js'
import { isEphemeralKind, Kind } from '../events/kinds.js'
import type { VerifyResult } from '../verify/result.js'
import type { Connection } from './connection.js'
import type { Reservation } from './event-limits.js'
import { onPairingEvent } from './on-pairing.js'
import {
  firstRefusal,
  refusalError,
  rejectEventBeforeSignature,
  rejectEventBeforeStore,
  signatureRefusal,
  type EventBeforeStore,
} from './refusals.js'

/** EVENT: checks before the signature, the signature, admission, then store or relay. */
export function onEvent(conn: Connection, value: unknown, frameBytes: number): void {
  const event = conn.parseOrRefuse(value)
  if (event === undefined) return
  if (event.kind === Kind.Pairing) {
    onPairingEvent(conn, event, frameBytes)
    return
  }
  const { ctx } = conn
  const member = conn.isMemberConnection
  const refused = firstRefusal(rejectEventBeforeSignature, {
    event,
    member,
    authorityLane: () =>
      ctx.grants.authorize(event.pubkey, { now: ctx.now(), kind: event.kind }).ok,
    verifying: conn.verifying,
    limits: ctx.limits,
    rateRefusal: () => {
      const err = ctx.eventLimits.wouldRefuse(event, ctx.now(), Date.now())
      return err === undefined ? undefined : toNostrMessage(err)
    },
  })
  if (refused !== undefined) {
    conn.ok(event.id, false, refused)
    return
  }
  const raw = JSON.stringify(event)
  conn.verify(event, raw, (result) => afterSignature(conn, event, raw, result), member)
}

function afterSignature(conn: Connection, event: NostrEvent, raw: string, result: VerifyResult) {
  if (result !== 'ok') {
    conn.ok(event.id, false, signatureRefusal(result))
    return
  }
  const { ctx } = conn
  const now = ctx.now()
  let reservation: Reservation | undefined
  // The one admission rule hubs and nodes share (grants, channels); the hub's own checks
  // (refusals.ts rejectEventBeforeStore) run before anything changes.
  const admission = ctx.state.admit(event, now, {
    relayed: conn.isPeerConnection(now),
    beforeChange: () => {
      const input: EventBeforeStore = {
        event,
        raw,
        now,
        nowMs: Date.now(),
        limits: ctx.limits,
        eventLimits: ctx.eventLimits,
      }
      const refused = firstRefusal(rejectEventBeforeStore, input)
      reservation = input.reservation
      if (refused !== undefined) throw refusalError(refused)
    },
  })
  if (!admission.ok) {
    if (reservation !== undefined) ctx.eventLimits.settle(reservation)
    conn.ok(event.id, false, toNostrMessage(admission.error))
    return
  }
  // A revocation takes effect before it is stored, so no event slips in meanwhile.
  if (admission.revoked) ctx.enforce(event)
  if (!admission.store) {
    if (reservation !== undefined) ctx.eventLimits.settle(reservation)
    conn.ok(event.id, true, admission.note)
    return
  }
  if (isEphemeralKind(event.kind)) {
    ctx.fanOut(raw, event)
    conn.ok(event.id, true, '')
    return
  }
  ctx.commit.submit(event, raw, (outcome) => {
    if (reservation !== undefined) ctx.eventLimits.settle(reservation)
    if (outcome instanceof Error) {
      ctx.log(`store failed: ${outcome.message}`)
      conn.ok(event.id, false, 'error: could not store the event; try again')
    } else if (outcome === 'stored') {
      conn.ok(event.id, true, admission.note)
      ctx.fanOut(raw, event)
    } else if (outcome === 'duplicate') {
      conn.ok(event.id, true, 'duplicate: already have this event')
    } else {
      // An older version (kept for the set, not served): say why, when admission knows.
      conn.ok(
        event.id,
        true,
        admission.note || 'duplicate: a newer version of this event is stored',
      )
    }
  })
}
