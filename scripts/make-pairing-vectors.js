// Writes test/vectors/pairing.json: a kith-pair/1 run with every random value fixed, and what it
// must produce (code text, transcript hash, SAS, keys). Run after `npm run build`; the tests load
// the file and never regenerate it.
import { writeFileSync } from 'node:fs'
import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js'
import { encodePairingCode } from '../dist/pairing/protocol/code.js'
import { InviterHandshake, JoinerHandshake } from '../dist/pairing/protocol/handshake.js'
import { abortMac, deriveKeys, ecdhX } from '../dist/pairing/protocol/crypto.js'
import { makeSeededRandom } from '../dist/pairing/protocol/seeded.js'

const input = {
  now: 1_800_000_000,
  hub: 'ws://127.0.0.1:7447',
  owner: bytesToHex(sha256(utf8ToBytes('owner'))).replace(/^../, '79'), // any 32-byte x-only key form
  name: 'alice',
  role: 'device',
  inviterSeed: 'kith-pair/1 vector inviter',
  joinerSeed: 'kith-pair/1 vector joiner',
}
const inviter = new InviterHandshake(
  { hub: input.hub, owner: input.owner, name: input.name, role: input.role },
  { now: input.now, random: makeSeededRandom(input.inviterSeed) },
)
const joiner = new JoinerHandshake(inviter.code, {
  now: input.now,
  random: makeSeededRandom(input.joinerSeed),
})
const commit = joiner.start()
const nonce = inviter.handle(commit, input.now)
const reveal = joiner.handle(nonce, input.now)
inviter.handle(reveal, input.now)
if (inviter.sas !== joiner.sas) throw new Error('vector run disagrees with itself')
// The inviter's first draw is its ephemeral secret (valid for these seeds), so the keys can be
// recomputed from the seed: ECDH with the joiner's revealed key, HKDF with qs and TH.
const eskI = makeSeededRandom(input.inviterSeed)(32)
const keys = deriveKeys(ecdhX(eskI, reveal.epk), inviter.code.qs, inviter.transcript)
const vectors = {
  description:
    'kith-pair/1 frozen run. random(n) for each side is SHA-256(seed ‖ counter) stream (see src/pairing/protocol/seeded.ts); the inviter draws ephemeral key, pid, qs, nI in that order; the joiner draws ephemeral key, nR.',
  input,
  code: encodePairingCode(inviter.code),
  messages: { commit, nonce, reveal },
  transcript_hash: bytesToHex(inviter.transcript),
  sas: inviter.sas,
  keys: {
    confirm: bytesToHex(keys.confirm),
    joiner_to_inviter: bytesToHex(keys.joinerToInviter),
    inviter_to_joiner: bytesToHex(keys.inviterToJoiner),
  },
  // An authenticated abort from the joiner: HMAC(kConf, F("abort", "R", TH, reason, detail)).
  abort: joiner.abort('hub-refused', 'invalid: pairing frames are at most 4096 bytes'),
}
if (
  vectors.abort.mac !==
  abortMac(keys.confirm, 'R', inviter.transcript, vectors.abort.reason, vectors.abort.detail)
)
  throw new Error('abort MAC disagrees with itself')
writeFileSync(
  new URL('../test/vectors/pairing.json', import.meta.url),
  `${JSON.stringify(vectors, null, 2)}\n`,
)
console.log('wrote pairing vectors, sas', inviter.sas)
