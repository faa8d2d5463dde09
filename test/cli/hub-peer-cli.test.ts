import { statSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { signEvent } from '../../src/events/event.js'
import { homeFiles } from '../../src/identity/home.js'
import { readKeyFile } from '../../src/identity/key-file.js'
import { runKith, startHubProcess } from '../helpers/cli.js'
import { connectRaw } from '../helpers/hub.js'
import { tempDir } from '../helpers/tmp.js'

describe('kith hub key, kith hub grant, kith hub --peer', { timeout: 120_000 }, () => {
  it('a second hub, granted by the founder, replicates the first one’s messages', async () => {
    const dir = tempDir('kith-peer-')
    const founder = join(dir, 'founder')
    const hubHome = join(dir, 'devbox-hub')
    expect((await runKith(['init', '--name', 'laptop'], { home: founder })).code).toBe(0)
    const who = JSON.parse((await runKith(['whoami', '--json'], { home: founder })).stdout) as {
      owner: string
    }
    const a = await startHubProcess(['--db', join(dir, 'a.db'), '--no-web'], founder)
    expect((await runKith(['hub', 'add', a.url], { home: founder })).code).toBe(0)

    const key1 = await runKith(['hub', 'key', '--owner', who.owner, '--json'], { home: hubHome })
    const key2 = await runKith(['hub', 'key', '--owner', who.owner, '--json'], { home: hubHome })
    const { key, request } = JSON.parse(key1.stdout) as { key: string; request: string }
    expect((JSON.parse(key2.stdout) as { key: string }).key).toBe(key)
    expect(statSync(join(hubHome, homeFiles.hubKey)).mode & 0o777).toBe(0o600)
    expect(request).toMatch(/^kith-hub:[0-9a-f]{64}:[0-9a-f]{128}$/)

    const bad = await runKith(['hub', 'grant', 'kith-hub:nope'], { home: founder })
    expect(bad.code).toBe(2)
    expect(bad.stderr).toMatch(/kith hub key/)
    // A request made for another fleet carries consent to another founder: refused.
    const otherFleet = await runKith(['hub', 'key', '--owner', key, '--json'], {
      home: join(dir, 'other'),
    })
    const foreign = JSON.parse(otherFleet.stdout) as { request: string }
    const refused = await runKith(['hub', 'grant', foreign.request], { home: founder })
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toMatch(/another fleet/)

    const granted = await runKith(['hub', 'grant', request, '--name', 'devbox'], { home: founder })
    expect(granted.code, granted.stderr).toBe(0)
    expect(granted.stdout).toMatch(/granted hub npub1/)

    const b = await startHubProcess(
      ['--db', join(dir, 'b.db'), '--no-web', '--owner', who.owner, '--peer', a.url],
      hubHome,
    )
    const ownerSk = readKeyFile(join(founder, homeFiles.ownerKey))!
    const atB = await connectRaw(b.url)
    expect((await atB.auth(b.url, ownerSk))[2]).toBe(true)
    const message = signEvent(
      {
        kind: 9,
        created_at: Math.floor(Date.now() / 1000),
        tags: [['h', 'ops']],
        content: 'posted at A',
      },
      ownerSk,
    )
    const stored = await atB.req('live', { ids: [message.id] })
    expect(stored.events).toEqual([])
    const atA = await connectRaw(a.url)
    expect((await atA.auth(a.url, ownerSk))[2]).toBe(true)
    atA.send(['EVENT', message])
    expect((await atA.ok(message.id))[2]).toBe(true)
    const reached = await atB.next((f) => f[0] === 'EVENT' && f[1] === 'live', 30_000)
    expect((reached[2] as { content: string }).content).toBe('posted at A')
  })
})
