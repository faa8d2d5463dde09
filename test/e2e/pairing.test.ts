import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { publicKeyOf } from '../../src/events/event.js'
import { loadIdentity } from '../../src/identity/keys.js'
import { GrantBook } from '../../src/node/grant-book.js'
import { startHostileHub, type LaneParty } from '../helpers/hostile-hub.js'
import { runKith, setupKith, spawnKith, startHubProcess, startNodeProcess } from '../helpers/cli.js'
import { tempDir } from '../helpers/tmp.js'

const sasLine = /do not type it anywhere:\s+(\d{3} \d{3})/
const codePattern = /kith join (kith-pair1:[A-Za-z0-9_-]+)/

/** A laptop (owner key) with a hub; returns what a pairing needs. */
async function laptopWithHub() {
  const dir = tempDir()
  const laptop = join(dir, 'laptop')
  expect((await setupKith(['init', '--name', 'laptop'], { home: laptop })).code).toBe(0)
  const hub = await startHubProcess(['--db', join(dir, 'hub.db')], laptop)
  await setupKith(['hub', 'add', hub.url], { home: laptop })
  return { dir, laptop, hub }
}

describe(
  'kith pair / kith join (real processes, answers typed on stdin)',
  { timeout: 120_000 },
  () => {
    it(
      'enrolls a new machine: same 6 digits on both screens, a grant, one name, and its node is accepted',
      { timeout: 120_000 },
      async () => {
        const { dir, laptop, hub } = await laptopWithHub()
        const pair = spawnKith(['pair', '--name', 'devbox'], laptop)
        const code = (await pair.waitFor(codePattern))[1]!
        const devbox = join(dir, 'devbox')
        const joiner = spawnKith(['join', code], devbox)
        await joiner.waitFor(
          /Join the fleet of laptop \(npub1\w+\)\s+via the hub ws:\/\/127\.0\.0\.1:\d+, as a device\?/,
        )
        // The digits come before any question: one y, once they are compared.
        const sasJ = (await joiner.waitFor(sasLine))[1]
        expect(joiner.output().split(sasJ!)[0]).not.toMatch(/\[y\/N\]/)
        const sasI = (await pair.waitFor(sasLine))[1]
        expect(sasJ).toBe(sasI)
        joiner.write('y\n')
        pair.write('y\n')
        expect(await pair.exit).toBe(0)
        expect(await joiner.exit).toBe(0)
        expect(pair.output()).toMatch(/paired: devbox npub1\w+ is now a device of this fleet/)
        expect(joiner.output()).toMatch(/start this node with: kith up/)
        // One name on both screens: the inviter's, which the new machine takes (not its hostname).
        expect(joiner.output()).toMatch(/joined the fleet of laptop as devbox \(npub1\w+\)/)
        // The new machine has no owner key, a device grant from the owner, and the fleet's hub.
        const who = JSON.parse(
          (await runKith(['whoami', '--json'], { home: devbox })).stdout,
        ) as Record<string, unknown>
        expect(who).toMatchObject({ name: 'devbox', ownerKeyHere: false, hubs: [hub.url] })
        const devices = JSON.parse(
          (await runKith(['device', 'list', '--json'], { home: laptop })).stdout,
        ) as {
          devices: { name: string; status: string }[]
        }
        expect(devices.devices.map((d) => [d.name, d.status]).sort()).toEqual([
          ['devbox', 'active'],
          ['laptop', 'active'],
        ])
        // kith up on it just works, and the hub accepts what it posts.
        const node = await startNodeProcess(devbox)
        await node.waitFor(/linked to/)
        const sent = JSON.parse(
          (await runKith(['send', '#ops', 'hello from the devbox', '--json'], { home: devbox }))
            .stdout,
        ) as {
          delivery: { ok: boolean }
        }
        expect(sent.delivery.ok).toBe(true)
        // The code is single use.
        const again = await runKith(['join', code, '--yes'], { home: join(dir, 'other') })
        expect(again.code).toBe(1)
        expect(again.stderr).toMatch(/This code was already used; make a new one\./)
        // A second device under a name one of the person's devices has is refused, before any
        // code is shown: kith device revoke devbox and @devbox could no longer say which.
        const twice = await runKith(['pair', '--name', 'devbox'], { home: laptop })
        expect(twice.code).toBe(2)
        expect(twice.stderr).toMatch(/you already have a device named devbox \(npub1\w+\)/)
        expect(twice.stderr).not.toMatch(/kith join/)

        // A device renames itself (its own key signs its name); every list then shows the new one.
        const notMine = await runKith(['device', 'rename', 'devbox', 'other'], { home: laptop })
        expect(notMine.code).toBe(1)
        expect(notMine.stderr).toMatch(
          /a device names itself \(its own key signs its name\): run kith device rename other on devbox/,
        )
        const renamed = await runKith(['device', 'rename', 'buildbox'], { home: devbox })
        expect(renamed.code, renamed.stderr).toBe(0)
        expect(renamed.stdout).toMatch(/renamed this device: devbox → buildbox/)
        const whoNow = JSON.parse(
          (await runKith(['whoami', '--json'], { home: devbox })).stdout,
        ) as Record<string, unknown>
        expect(whoNow.name).toBe('buildbox')
        const listed = JSON.parse(
          (await runKith(['device', 'list', '--json'], { home: laptop })).stdout,
        ) as { devices: { name: string; status: string }[] }
        expect(listed.devices.map((d) => d.name).sort()).toEqual(['buildbox', 'laptop'])
      },
    )

    it('tells the other side at once when one person says no (either side), and shares nothing', async () => {
      const { dir, laptop } = await laptopWithHub()
      const words =
        'Pairing cancelled: the codes were not confirmed on both screens. Nothing was shared.'
      // The joiner's person says no; the inviter's has not answered yet and need not.
      const pair = spawnKith(['pair'], laptop)
      const code = (await pair.waitFor(codePattern))[1]!
      const devbox = join(dir, 'devbox')
      const joiner = spawnKith(['join', code, '--yes'], devbox)
      await joiner.waitFor(sasLine)
      await pair.waitFor(sasLine)
      joiner.write('n\n')
      expect(await joiner.exit).toBe(1)
      expect(await pair.exit).toBe(1)
      expect(joiner.output()).toContain(words)
      expect(pair.output()).toContain(words)
      expect(pair.output()).toContain('reason: on the other machine')
      const devices = JSON.parse(
        (await runKith(['device', 'list', '--json', '--offline'], { home: laptop })).stdout,
      ) as {
        devices: unknown[]
      }
      expect(devices.devices).toHaveLength(1)
      expect((await runKith(['whoami'], { home: devbox })).code).toBe(3)
      // The inviter's person says no; the joiner's is still looking.
      const pair2 = spawnKith(['pair'], laptop)
      const code2 = (await pair2.waitFor(codePattern))[1]!
      const joiner2 = spawnKith(['join', code2, '--yes'], join(dir, 'devbox2'))
      await joiner2.waitFor(sasLine)
      await pair2.waitFor(sasLine)
      pair2.write('n\n')
      expect(await pair2.exit).toBe(1)
      expect(await joiner2.exit).toBe(1)
      expect(joiner2.output()).toContain(words)
      expect(joiner2.output()).toContain('reason: on the other machine')
    })

    it('Ctrl-C on one side ends the other side at once, with its reason', async () => {
      const { dir, laptop } = await laptopWithHub()
      const pair = spawnKith(['pair'], laptop)
      const code = (await pair.waitFor(codePattern))[1]!
      const joiner = spawnKith(['join', code, '--yes'], join(dir, 'devbox'))
      await joiner.waitFor(sasLine)
      await pair.waitFor(sasLine)
      joiner.child.kill('SIGINT')
      expect(await joiner.exit).toBe(1)
      expect(await pair.exit).toBe(1)
      expect(joiner.output()).toContain('Pairing cancelled here. Nothing was shared.')
      expect(pair.output()).toContain('Pairing cancelled by the other side. Nothing was shared.')
    })

    it('cancels for safety when a third device tries the same code', async () => {
      const { dir, laptop } = await laptopWithHub()
      const pair = spawnKith(['pair'], laptop)
      const code = (await pair.waitFor(codePattern))[1]!
      const first = spawnKith(['join', code, '--yes'], join(dir, 'a'))
      await first.waitFor(sasLine)
      const second = spawnKith(['join', code, '--yes'], join(dir, 'b'))
      const words = 'Another device tried to use this code; cancelled for safety.'
      expect(await second.exit).toBe(1)
      expect(second.output()).toContain(words)
      // The hub burnt the room: both parties are told at once, without answering.
      expect(await pair.exit).toBe(1)
      expect(await first.exit).toBe(1)
      expect(pair.output()).toContain(words)
      expect(first.output()).toContain(words)
    })

    it('locks after 3 failures in 15 minutes, says why, and re-arms', async () => {
      const { dir, laptop } = await laptopWithHub()
      for (let i = 0; i < 3; i++) {
        const pair = spawnKith(['pair'], laptop)
        const code = (await pair.waitFor(codePattern))[1]!
        const joiner = spawnKith(['join', code, '--yes'], join(dir, `j${i}`))
        await joiner.waitFor(sasLine)
        joiner.write('n\n')
        pair.write('n\n')
        expect(await pair.exit).toBe(1)
      }
      const locked = await runKith(['pair'], { home: laptop })
      expect(locked.code).toBe(1)
      expect(locked.stderr).toMatch(
        /locked after 3 failed attempts in 15 minutes; re-arm it with kith pair --rearm/,
      )
      expect((await runKith(['pair', '--rearm'], { home: laptop })).stdout).toMatch(/re-armed/)
      const pair = spawnKith(['pair'], laptop)
      await pair.waitFor(codePattern)
      pair.child.kill('SIGTERM')
    })

    it('reads the code from stdin with kith join -, for pasting over SSH', async () => {
      const { dir, laptop } = await laptopWithHub()
      const pair = spawnKith(['pair'], laptop)
      const code = (await pair.waitFor(codePattern))[1]!
      const joiner = spawnKith(['join', '-', '--name', 'devbox'], join(dir, 'devbox'))
      joiner.write(`${code}\n`)
      await joiner.waitFor(sasLine)
      await pair.waitFor(sasLine)
      joiner.write('y\n')
      pair.write('y\n')
      expect(await joiner.exit).toBe(0)
      expect(await pair.exit).toBe(0)
      expect(pair.output()).toMatch(/paired: devbox npub1/)
    })

    it('refuses a garbled code and a machine that already holds an owner key', async () => {
      const { dir, laptop } = await laptopWithHub()
      const bad = await runKith(['join', 'kith-pair1:AAAA', '--yes'], { home: join(dir, 'x') })
      expect(bad.code).toBe(1)
      expect(bad.stderr).toMatch(/not a kith pairing code/)
      const pair = spawnKith(['pair'], laptop)
      const code = (await pair.waitFor(codePattern))[1]!
      const owner = join(dir, 'owner2')
      await setupKith(['init'], { home: owner })
      const r = await runKith(['join', code, '--yes'], { home: owner })
      expect(r.code).toBe(1)
      expect(r.stderr).toMatch(/already belongs to a fleet/)
      pair.child.kill('SIGTERM')
    })
  },
)

/**
 * A laptop whose only hub is a lying proxy in front of a real hub (which accepts the proxy's URL
 * for AUTH, so everything but what the test tampers with works through it).
 */
async function laptopBehindHostileHub(opts: Parameters<typeof startHostileHub>[0]) {
  const dir = tempDir()
  const laptop = join(dir, 'laptop')
  expect((await setupKith(['init', '--name', 'laptop'], { home: laptop })).code).toBe(0)
  const proxy = await startHostileHub(opts)
  const hub = await startHubProcess(['--db', join(dir, 'hub.db'), '--url', proxy.url], laptop)
  proxy.connectTo(hub.url)
  expect((await setupKith(['hub', 'add', proxy.url], { home: laptop })).code).toBe(0)
  return { dir, laptop }
}

describe('pairing through a hub that refuses, injects or grows', { timeout: 120_000 }, () => {
  it("a refused frame shows the hub's own words on both screens, grants nothing, counts nothing", async () => {
    const refusal = 'invalid: pairing frames are at most 4096 bytes'
    const { dir, laptop } = await laptopBehindHostileHub({
      onPairing: (party, content) =>
        party.index === 0 && content.t === 'confirm-i' ? { refuse: refusal } : 'forward',
    })
    const pair = spawnKith(['pair', '--name', 'devbox'], laptop)
    const code = (await pair.waitFor(codePattern))[1]!
    const devbox = join(dir, 'devbox')
    const joiner = spawnKith(['join', code, '--yes'], devbox)
    await joiner.waitFor(sasLine)
    await pair.waitFor(sasLine)
    joiner.write('y\n')
    pair.write('y\n')
    expect(await pair.exit).toBe(1)
    expect(await joiner.exit).toBe(1)
    for (const side of [pair.output(), joiner.output()]) {
      expect(side).toContain('Pairing stopped: the hub refused a pairing message')
      expect(side).toContain(refusal)
      expect(side).not.toContain('cancelled by the other side')
    }
    // No phantom device: nothing in the laptop's node.db, nothing on the hub (the list syncs).
    const devices = JSON.parse(
      (await runKith(['device', 'list', '--json'], { home: laptop })).stdout,
    ) as { devices: { name: string; status: string }[] }
    expect(devices.devices.map((d) => d.name)).toEqual(['laptop'])
    expect((await runKith(['whoami'], { home: devbox })).code).toBe(3)
    // Not counted: three more such failures would not lock; the next pairing starts.
    expect(readFailures(laptop)).toEqual([])
  })

  it('aborts the hub injects are shown as interruptions and never lock pairing', async () => {
    const parties = new Map<string, LaneParty[]>()
    let injectAt: 'sas' | 'start' = 'sas'
    const { dir, laptop } = await laptopBehindHostileHub({
      onSubscribed: (party) => {
        parties.set(party.pid, [...(parties.get(party.pid) ?? []), party])
        if (injectAt === 'start' && party.index === 0)
          party.inject({ t: 'abort', reason: 'declined' })
      },
      onPairing: (party, content) => {
        // Once the joiner reveals, both screens show the digits: then forge the joiner's "no".
        if (injectAt === 'sas' && party.index === 1 && content.t === 'reveal') {
          const inviter = parties.get(party.pid)?.[0]
          setTimeout(() => inviter?.inject({ t: 'abort', reason: 'mac-failed' }), 300)
        }
        return 'forward'
      },
    })
    const pair = spawnKith(['pair'], laptop)
    const code = (await pair.waitFor(codePattern))[1]!
    const joiner = spawnKith(['join', code, '--yes'], join(dir, 'devbox'))
    await pair.waitFor(sasLine)
    expect(await pair.exit).toBe(1)
    expect(await joiner.exit).toBe(1)
    const interrupted =
      'Pairing stopped: the connection was interrupted (not counted against the lockout).'
    expect(pair.output()).toContain(interrupted)
    expect(pair.output()).toContain('an unverified abort arrived (mac-failed)')
    expect(pair.output()).not.toMatch(/security check failed/)
    // The joiner is told by the inviter itself (authenticated), with the same words.
    expect(joiner.output()).toContain(interrupted)
    // Twice more, before anyone joins.
    injectAt = 'start'
    for (let i = 0; i < 2; i++) {
      const p = spawnKith(['pair'], laptop)
      expect(await p.exit).toBe(1)
      expect(p.output()).toContain(interrupted)
    }
    // Three failures in a row, none of them counted: pairing is not locked.
    injectAt = 'sas'
    const next = spawnKith(['pair'], laptop)
    await next.waitFor(codePattern)
    next.child.kill('SIGTERM')
    expect(await next.exit).toBe(1)
  })

  it('a fleet with 20 revocations still pairs; the new node learns them from its hub', async () => {
    const { dir, laptop } = await laptopWithHub()
    const id = loadIdentity(laptop)
    const book = GrantBook.open(laptop, id.config.fleet!)
    const t = Math.floor(Date.now() / 1000)
    try {
      for (let i = 0; i < 20; i++) {
        const sk = generateSecretKey()
        book.issueGrant(
          { subject: publicKeyOf(sk), subjectSecret: sk, role: 'agent', name: `old-${i}` },
          id.ownerSecret!,
          t,
        )
        book.issueRevocation({ keys: [publicKeyOf(sk)] }, id.ownerSecret!, t)
      }
    } finally {
      book.close()
    }
    // The hub gets them all (the list syncs first).
    expect((await runKith(['device', 'list'], { home: laptop })).code).toBe(0)
    const pair = spawnKith(['pair', '--name', 'devbox'], laptop)
    const code = (await pair.waitFor(codePattern))[1]!
    const devbox = join(dir, 'devbox')
    const joiner = spawnKith(['join', code, '--yes'], devbox)
    await joiner.waitFor(sasLine)
    await pair.waitFor(sasLine)
    joiner.write('y\n')
    pair.write('y\n')
    expect(await pair.exit, pair.output()).toBe(0)
    expect(await joiner.exit, joiner.output()).toBe(0)
    const learned = GrantBook.open(devbox, id.config.fleet!)
    try {
      expect(learned.verifier.allRevocations()).toHaveLength(20)
      expect(learned.authorize(loadIdentity(devbox).devicePubkey, t).ok).toBe(true)
    } finally {
      learned.close()
    }
  })
})

/** The failures `kith pair` has counted toward its lockout (pairing-failures.json). */
function readFailures(home: string): number[] {
  try {
    return JSON.parse(readFileSync(join(home, 'pairing-failures.json'), 'utf8')) as number[]
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw err
  }
}
