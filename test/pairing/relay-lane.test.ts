import { join } from 'node:path'
import { generateSecretKey } from 'nostr-tools/pure'
import WebSocket from 'ws'
import { describe, expect, it } from 'vitest'
import { publicKeyOf } from '../../src/events/event.js'
import { RelayClient } from '../../src/link/relay-client.js'
import { joinOverLane } from '../../src/pairing/join-over-lane.js'
import { decodePairingCode } from '../../src/pairing/protocol/code.js'
import { PairError } from '../../src/pairing/protocol/errors.js'
import { RelayPairingLane } from '../../src/pairing/relay-lane.js'
import { runKith, setupKith, spawnKith, startHubProcess } from '../helpers/cli.js'
import { codeOf, sasLine } from '../helpers/pair-up.js'
import { tempDir } from '../helpers/tmp.js'

/** A laptop (owner key) using a real `kith hub`. */
async function laptopWithHub() {
  const dir = tempDir()
  const laptop = join(dir, 'laptop')
  expect((await setupKith(['init', '--name', 'laptop'], { home: laptop })).code).toBe(0)
  const hub = await startHubProcess(['--db', join(dir, 'hub.db')], laptop)
  expect((await setupKith(['hub', 'add', hub.url], { home: laptop })).code).toBe(0)
  return { laptop, hub }
}

/** The lane as a browser opens it: a RelayClient over a plain WebSocket, no Node helpers. */
async function openLane(hub: string, pid: string): Promise<RelayPairingLane> {
  const client = await RelayClient.connect(new WebSocket(hub), { url: hub })
  return RelayPairingLane.open(client, pid)
}

describe(
  'the joiner over a RelayClient lane (what the web app runs) against a real kith pair',
  { timeout: 60_000 },
  () => {
    it('enrolls a key made outside any KITH_HOME: same digits, a device grant, the hubs', async () => {
      const { laptop, hub } = await laptopWithHub()
      const pair = spawnKith(['pair', '--name', 'phone'], laptop)
      const code = decodePairingCode((await pair.waitFor(codeOf('kith join')))[1]!)
      const secret = generateSecretKey()
      const pubkey = publicKeyOf(secret)
      let shown: string | undefined
      const stored: unknown[] = []
      const result = await joinOverLane(code, await openLane(code.hub, code.pid), {
        compare: async (sas) => {
          shown = sas
          const theirs = (await pair.waitFor(sasLine))[1]!
          expect(theirs.replace(' ', '')).toBe(sas)
          pair.write('y\n')
          return true
        },
        key: () => ({ pubkey, secret, name: 'browser' }),
        enroll: (enrollment) => {
          stored.push(enrollment)
        },
      })
      expect(shown).toMatch(/^\d{6}$/)
      expect(await pair.exit, pair.output()).toBe(0)
      expect(pair.output()).toMatch(/paired: phone npub1\w+ is now a device of this fleet/)
      expect(stored).toHaveLength(1)
      expect(result.hubs).toEqual([hub.url])
      expect(result.enrollment.grant.tags).toContainEqual(['p', pubkey])
      expect(result.enrollment.grant.tags).toContainEqual(['name', 'phone'])
      const devices = JSON.parse(
        (await runKith(['device', 'list', '--json'], { home: laptop })).stdout,
      ) as { devices: { name: string; status: string }[] }
      expect(devices.devices).toContainEqual(
        expect.objectContaining({ name: 'phone', status: 'active' }),
      )
    })

    it('a "no" on the browser shows the same words on the laptop, and nothing is granted', async () => {
      const { laptop } = await laptopWithHub()
      const pair = spawnKith(['pair', '--name', 'phone'], laptop)
      const code = decodePairingCode((await pair.waitFor(codeOf('kith join')))[1]!)
      const secret = generateSecretKey()
      const failure = await joinOverLane(code, await openLane(code.hub, code.pid), {
        compare: () => Promise.resolve(false),
        key: () => ({ pubkey: publicKeyOf(secret), secret, name: 'browser' }),
        enroll: () => {
          throw new Error('never enrolled')
        },
      }).catch((err: unknown) => err)
      expect(failure).toBeInstanceOf(PairError)
      expect(failure).toMatchObject({ code: 'pairing-failed', reason: 'declined' })
      await pair.waitFor(sasLine)
      pair.write('y\n')
      expect(await pair.exit).toBe(1)
      expect(pair.output()).toMatch(/the codes were not confirmed on both screens/)
    })

    it('a third device on the code burns the room: the browser is told, in the same words', async () => {
      const { laptop } = await laptopWithHub()
      const pair = spawnKith(['pair', '--name', 'phone'], laptop)
      const code = decodePairingCode((await pair.waitFor(codeOf('kith join')))[1]!)
      const lane = await openLane(code.hub, code.pid)
      // An onlooker who saw the QR joins the same room before the browser commits.
      const thief = await openLane(code.hub, code.pid).catch((err: unknown) => err)
      expect(thief).toBeInstanceOf(PairError)
      expect(thief).toMatchObject({ code: 'pairing-failed', reason: 'third-party' })
      const err = await lane.next(5_000).catch((e: unknown) => e)
      expect((err as PairError).reason).toBe('third-party')
      // The same words as the CLI's screen, with the hub's own.
      expect((err as PairError).message).toBe(
        'Another device tried to use this code; cancelled for safety.\n' +
          '  reason: restricted: pairing: another device tried to use this code; cancelled for safety',
      )
      lane.close()
      pair.child.kill('SIGTERM')
    })
  },
)
