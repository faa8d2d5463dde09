import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { bytesToHex } from '@noble/hashes/utils.js'
import {
  decodePairingCode,
  encodePairingCode,
  type PairRole,
} from '../../src/pairing/protocol/code.js'
import { deriveKeys, ecdhX } from '../../src/pairing/protocol/crypto.js'
import { makeSeededRandom } from '../../src/pairing/protocol/seeded.js'
import {
  InviterHandshake,
  JoinerHandshake,
  type PairMessage,
} from '../../src/pairing/protocol/handshake.js'

const v = JSON.parse(readFileSync(new URL('../vectors/pairing.json', import.meta.url), 'utf8')) as {
  input: {
    now: number
    hub: string
    owner: string
    name: string
    role: PairRole
    inviterSeed: string
    joinerSeed: string
  }
  code: string
  messages: { commit: PairMessage; nonce: PairMessage; reveal: PairMessage & { epk: string } }
  transcript_hash: string
  sas: string
  keys: { confirm: string; joiner_to_inviter: string; inviter_to_joiner: string }
  abort: PairMessage
}

describe('kith-pair/1 frozen vectors (test/vectors/pairing.json)', () => {
  it('a fixed transcript gives the fixed code, messages, SAS and keys', () => {
    const { input } = v
    const inviter = new InviterHandshake(
      { hub: input.hub, owner: input.owner, name: input.name, role: input.role },
      { now: input.now, random: makeSeededRandom(input.inviterSeed) },
    )
    expect(encodePairingCode(inviter.code)).toBe(v.code)
    expect(decodePairingCode(v.code)).toEqual(inviter.code)
    const joiner = new JoinerHandshake(inviter.code, {
      now: input.now,
      random: makeSeededRandom(input.joinerSeed),
    })
    const commit = joiner.start()
    expect(commit).toEqual(v.messages.commit)
    const nonce = inviter.handle(commit, input.now)
    expect(nonce).toEqual(v.messages.nonce)
    const reveal = joiner.handle(nonce!, input.now)
    expect(reveal).toEqual(v.messages.reveal)
    inviter.handle(reveal!, input.now)
    expect(bytesToHex(inviter.transcript!)).toBe(v.transcript_hash)
    expect(bytesToHex(joiner.transcript!)).toBe(v.transcript_hash)
    expect(inviter.sas).toBe(v.sas)
    expect(joiner.sas).toBe(v.sas)
    const keys = deriveKeys(
      ecdhX(makeSeededRandom(input.inviterSeed)(32), v.messages.reveal.epk),
      inviter.code.qs,
      inviter.transcript!,
    )
    expect({
      confirm: bytesToHex(keys.confirm),
      joiner_to_inviter: bytesToHex(keys.joinerToInviter),
      inviter_to_joiner: bytesToHex(keys.inviterToJoiner),
    }).toEqual(v.keys)
    // The joiner's authenticated abort, and the inviter taking it as the joiner's own reason.
    expect(joiner.abort('hub-refused', 'invalid: pairing frames are at most 4096 bytes')).toEqual(
      v.abort,
    )
    expect(() => inviter.handle(v.abort, input.now)).toThrow(
      /hub refused a pairing message[\s\S]*on the other machine: invalid: pairing frames/,
    )
  })
})
