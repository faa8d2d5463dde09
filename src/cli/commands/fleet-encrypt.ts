import { KithError } from '../../errors.js'
import { makeFleetSetting, parseRotatePeriod, rotateEveryOf } from '../../events/e2e-setting.js'
import { sealingLapse } from '../../grants/e2e-sealing.js'
import { fleetSealingHere } from '../../node/e2e-keys.js'
import { signEvent } from '../../events/event.js'
import { withStore } from '../local-node.js'
import type { Out } from '../io.js'
import { nowSeconds, withNode } from './fleet-common.js'

/**
 * `kith fleet encrypt [on|off]` (kith-e2e/1, "Turning it on"): signs the fleet's encryption
 * setting with this machine's owner key, which must be the founder's or an admin's. It goes out
 * through the outbox like a grant; every node seals what it sends once it has the setting.
 * Without on/off it says what the setting is here.
 */
export async function fleetEncrypt(
  arg: string | undefined,
  json: boolean,
  out: Out,
  rotateEvery?: string,
): Promise<number> {
  if (arg !== undefined && arg !== 'on' && arg !== 'off')
    throw new KithError('usage', 'kith fleet encrypt takes on, off, or nothing (to show it)')
  if (rotateEvery !== undefined && arg !== 'on')
    throw new KithError('usage', '--rotate-every goes with kith fleet encrypt on')
  const period = rotateEvery === undefined ? undefined : parseRotatePeriod(rotateEvery)
  return withNode((node) => {
    const now = nowSeconds()
    if (arg === undefined) {
      const s = withStore(node.id.home, (store) =>
        fleetSealingHere(store, node.book, node.fleet, now),
      )
      const lapse = sealingLapse(s)
      if (json)
        out.json({
          encrypt: s.on,
          ...(s.on ? { rotateEverySeconds: s.rotateEvery } : {}),
          ...(lapse === undefined ? {} : { sealLapse: lapse }),
        })
      else
        out.line(
          s.on
            ? `this fleet seals its channels (kith-e2e/1); each channel's key is replaced every ${periodText(s.rotateEvery)}`
            : (lapse ?? 'encryption is off'),
        )
      return 0
    }
    const owner = node.id.ownerSecret
    if (owner === undefined || node.id.ownerPubkey === undefined)
      throw new KithError(
        'restricted',
        'kith fleet encrypt runs on the machine that holds your owner key',
      )
    if (!node.book.state.channels.isAuthority(node.id.ownerPubkey, now, 'fleet.setting'))
      throw new KithError(
        'restricted',
        'only the founder or an admin may change the fleet setting',
        {
          reason: 'no-authority',
        },
      )
    const setting = signEvent(makeFleetSetting(node.fleet, arg === 'on', now, period), owner)
    withStore(node.id.home, (store) => store.enqueue(setting, now))
    const every = rotateEveryOf(setting)
    if (json)
      out.json({
        encrypt: arg === 'on',
        event: setting.id,
        ...(arg === 'on' ? { rotateEverySeconds: every } : {}),
      })
    else
      out.line(
        arg === 'on'
          ? `this fleet now seals its channels: hubs and relays carry ciphertext (kith-e2e/1); earlier messages stay as they were; each channel's key is replaced every ${periodText(every)}`
          : 'this fleet no longer seals new messages; sealed ones stay readable to those who hold their keys',
      )
    return 0
  })
}

/** A period as a person writes it: 7d, 12h, 90m. */
function periodText(seconds: number): string {
  if (seconds % 86_400 === 0) return `${seconds / 86_400}d`
  if (seconds % 3_600 === 0) return `${seconds / 3_600}h`
  return `${Math.round(seconds / 60)}m`
}
