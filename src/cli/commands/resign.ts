import { makeFleetSetting, rotateTagOf } from '../../events/e2e-setting.js'
import { signEvent } from '../../events/event.js'
import { Kind } from '../../events/kinds.js'
import type { FleetNode } from '../../node/fleet.js'
import { fleetSealingHere } from '../../node/e2e-keys.js'
import { withStore } from '../local-node.js'
import type { Out } from '../io.js'
import { describeHubs, resignChannelsOf } from './channel.js'
import type { AfterRevocation } from './fleet-common.js'

/**
 * After a person's removal (`kith fleet remove`, or `kith revoke` of an owner key): what their
 * authority held is signed again with this machine's owner key, dated at the removal, so nothing
 * they back-date later can change it: the channels they created (every channel, for an admin)
 * and, for an admin, the fleet's sealing while it is on (kith-e2e/1, "Turning it on").
 */
export async function resignAuthorityOf(
  node: FleetNode,
  removed: string,
  revokedAt: number,
  out: Out,
): Promise<AfterRevocation> {
  const { resigned, failed } = await resignChannelsOf(node, removed, revokedAt, out)
  const sealing = resignSealing(node, removed, revokedAt)
  return {
    json: { resigned, ...(sealing === undefined ? {} : { resealed: sealing }) },
    lines: [
      ...resigned.flatMap((r) => [
        `re-signed #${r.channel} so it stays as it is (the removed person can no longer change it)`,
        ...describeHubs(r.hubs).map((l) => `  ${l}`),
      ]),
      ...(sealing === undefined
        ? []
        : ['re-signed the fleet setting "sealed" so the removed admin cannot turn it off']),
    ],
    ok: failed.length === 0 && resigned.every((r) => r.hubs.every((h) => h.ok)),
  }
}

/**
 * A removed admin could sign an "off" dated before their removal, which would then count: when
 * the fleet seals, "on" is signed again at the removal (after the setting in effect), so such an
 * "off" is older than it. Queued in the outbox, as `kith fleet encrypt` does; its id, or
 * undefined when there was nothing to re-sign.
 */
function resignSealing(node: FleetNode, removed: string, revokedAt: number): string | undefined {
  const owner = node.id.ownerSecret
  if (owner === undefined || node.id.ownerPubkey === undefined) return undefined
  const channels = node.book.state.channels
  const wasAdmin = node.book.verifier
    .grantsOf(removed)
    .some((e) => e.grant.role === 'owner' && e.grant.deleg)
  if (!wasAdmin || !channels.hadAuthority(node.id.ownerPubkey, revokedAt, Kind.FleetSetting))
    return undefined
  return withStore(node.id.home, (store) => {
    const sealing = fleetSealingHere(store, node.book, node.fleet, revokedAt)
    if (!sealing.on) return undefined
    const at = Math.max(revokedAt, (sealing.decidedBy?.created_at ?? 0) + 1)
    // The same period as the setting it repeats (kith-e2e/1, "Periodic rotation").
    const setting = signEvent(
      makeFleetSetting(node.fleet, true, at, rotateTagOf(sealing.decidedBy)),
      owner,
    )
    store.enqueue(setting, revokedAt)
    return setting.id
  })
}
