import { join } from 'node:path'
import { generateSecretKey } from 'nostr-tools/pure'
import { describe, expect, it, onTestFinished } from 'vitest'
import { ControlClient } from '../../src/cli/control-client.js'
import { newEpoch } from '../../src/events/e2e-epoch.js'
import { sealTemplate } from '../../src/events/e2e-seal.js'
import { makeFleetSetting } from '../../src/events/e2e-setting.js'
import { publicKeyOf, signEvent } from '../../src/events/event.js'
import { makePermissionRequest } from '../../src/events/permission-request.js'
import { signGrant } from '../../src/grants/grant.js'
import { homeFiles } from '../../src/identity/home.js'
import { initIdentity } from '../../src/identity/keys.js'
import type { OpenCard } from '../../src/node/permission-cards.js'
import { tempDir } from '../helpers/tmp.js'
import { startInProcessNode } from '../helpers/in-process-node.js'

const now = () => Math.floor(Date.now() / 1000)

describe('cards a device cannot open are not open for it (issue 31, item 6)', () => {
  it('a card sealed under an epoch this device never had is counted, not listed; /allow alone finds no card', async () => {
    const ownerSk = generateSecretKey()
    const fleet = publicKeyOf(ownerSk)
    const home = join(tempDir(), 'phone')
    initIdentity({ home, name: 'phone', ownerSecret: ownerSk })
    const phone = await startInProcessNode({ home, embedPort: 0, verifyWorkers: 0 })
    const agentSk = generateSecretKey()
    const agent = publicKeyOf(agentSk)
    await phone.intake([
      signEvent(makeFleetSetting(fleet, true, now()), ownerSk),
      signGrant({ subject: agent, role: 'agent', fleet, name: 'helper' }, ownerSk, agentSk, now()),
    ])
    // A card the agent asked before this device existed, sealed under an epoch it was never sent.
    const card = (title: string) =>
      makePermissionRequest(
        {
          channel: 'ops',
          fleet,
          prompt: 'a'.repeat(64),
          prompter: fleet,
          title,
          toolKind: 'execute',
          options: [{ optionId: 'allow', name: 'Allow once', kind: 'allow_once' }],
          expires: now() + 3600,
          toolCallId: 't1',
          sessionId: 's1',
          input: 'c'.repeat(64),
          nonce: '0123456789abcdef',
        },
        now(),
      )
    const epoch = newEpoch('ops', 0, (n) => crypto.getRandomValues(new Uint8Array(n)))
    const sealed = signEvent(sealTemplate(card('rm -rf old-build'), agent, epoch), agentSk)
    await phone.intake([sealed])

    const control = (await ControlClient.connect(join(home, homeFiles.controlSocket)))!
    onTestFinished(() => control.close())
    expect(await control.request<OpenCard[]>('cards', { channel: 'ops' })).toEqual([])
    expect(await control.request('cards-sealed', { channel: 'ops' })).toEqual({ count: 1 })
    // "/allow" with no number: no card open here, said as such (not a card it cannot answer).
    expect(() => phone.decide({ request: '@helper', option: 1, channel: 'ops' })).toThrow(
      /helper has no open permission request in #ops/,
    )
  })
})
