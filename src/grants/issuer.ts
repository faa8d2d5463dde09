import { KithError } from '../errors.js'
import type { Grant } from './grant.js'

/** A key's grant in effect now (the last of its chain), or undefined when it is no member. */
export type CurrentGrant = (pubkey: string) => Grant | undefined

/**
 * The grant a new grant by `issuer` hangs under (kith-grants): none for the founder, whose
 * grants are the roots; else the issuer's own current grant, undefined when it holds none.
 */
export function parentGrant(
  issuer: string,
  fleet: string,
  current: CurrentGrant,
): Grant | undefined {
  return issuer === fleet ? undefined : current(issuer)
}

export interface IssuerChoice {
  /** Which of this machine's keys signs: the owner key, or the device key. */
  by: 'owner' | 'device'
  issuer: string
  /** The issuer's grant the new one names as parent; undefined for the founder. */
  parent: string | undefined
  /** Whether the issuer is the founder or holds a current grant (else no grant of its holds). */
  chained: boolean
}

/**
 * Who on this machine signs a new grant, and under which of their grants: the owner key when it
 * is here (kith agent add, a device's own grant), else the device key, which may grant only
 * with a current grant that has deleg. Throws `restricted` (reason `no-authority`) when neither
 * may.
 */
export function chooseIssuer(
  keys: { owner?: string | undefined; device?: string | undefined },
  fleet: string,
  current: CurrentGrant,
): IssuerChoice {
  if (keys.owner !== undefined) {
    const parent = parentGrant(keys.owner, fleet, current)
    return {
      by: 'owner',
      issuer: keys.owner,
      parent: parent?.id,
      chained: keys.owner === fleet || parent !== undefined,
    }
  }
  const deviceGrant = keys.device === undefined ? undefined : current(keys.device)
  if (keys.device === undefined || deviceGrant === undefined || !deviceGrant.deleg) {
    throw new KithError(
      'restricted',
      'this device cannot grant agents: the owner key is not here and its grant has no deleg. ' +
        'Run kith agent add on the owner machine, or re-pair this device with delegation.',
      { reason: 'no-authority' },
    )
  }
  return { by: 'device', issuer: keys.device, parent: deviceGrant.id, chained: true }
}
