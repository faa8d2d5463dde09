import { describe, expect, it } from 'vitest'
import { generateSecretKey, getPublicKey } from 'nostr-tools/pure'
import {
  makeObserverFrame,
  openObserverFrame,
  sealFrameBody,
} from '../../src/events/observer-frame.js'

// kith-e2e/1, "What a hub learns" (issue 29, item 7): in a sealed fleet a hub routes an observer
// frame by its recipient and cannot link it to the sealed prompt whose turn it shows.

const frame = {
  recipient: 'a'.repeat(64),
  channel: 'ops',
  prompt: 'b'.repeat(64),
  content: 'ciphertext',
}

describe('observer frames', () => {
  it('attacker (a hub reading frames): in a sealed fleet no visible tag names the prompt', () => {
    const sealed = makeObserverFrame(frame, 1_750_000_000, true)
    expect(sealed.tags).toEqual([
      ['p', frame.recipient],
      ['h', 'ops'],
    ])
    expect(JSON.stringify(sealed.tags)).not.toContain(frame.prompt)
  })

  it('in a plain fleet the frame links its prompt, as plain clients expect', () => {
    expect(makeObserverFrame(frame, 1_750_000_000, false).tags).toContainEqual(['e', frame.prompt])
  })
})

describe('observer frame bodies', () => {
  it('open with the recipient’s key only, and a body that does not read is dropped', () => {
    const agent = generateSecretKey()
    const me = generateSecretKey()
    const other = generateSecretKey()
    const body = { prompt: 'b'.repeat(64), updates: [{ sessionUpdate: 'plan' }] }
    const content = sealFrameBody(body, agent, getPublicKey(me))
    const frame = { pubkey: getPublicKey(agent), content }
    expect(openObserverFrame(frame, me)).toEqual(body)
    expect(openObserverFrame(frame, other)).toBeUndefined()
    const notABody = sealFrameBody({ prompt: 7 } as never, agent, getPublicKey(me))
    expect(openObserverFrame({ ...frame, content: notABody }, me)).toBeUndefined()
  })
})
