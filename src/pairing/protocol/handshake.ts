import { randomBytes as nobleRandom } from '@noble/hashes/utils.js'
import { bytesToHex } from '@noble/hashes/utils.js'
import { encrypt as nip44Encrypt, decrypt as nip44Decrypt } from 'nostr-tools/nip44'
import { isHex64, verifyEventSignature, type NostrEvent } from '../../events/event.js'
import { Kind } from '../../events/kinds.js'
import { parseGrant, signGrantProof, verifyGrantProof } from '../../grants/grant.js'
import { GrantVerifier } from '../../grants/verifier.js'
import type { PairingCode, PairRole } from './code.js'
import {
  abortMac,
  checkPeerKey,
  commitment,
  confirmationMac,
  deriveKeys,
  ecdhX,
  ephemeralKey,
  sameMac,
  signTranscript,
  transcriptHash,
  verifyTranscriptSignature,
  type HandshakeKeys,
} from './crypto.js'
import { PairError, pairMessages, type PairCode_ } from './errors.js'
import {
  enrollmentPartBytes,
  maxAbortDetailChars,
  maxEnrollmentParts,
  maxProposedNameChars,
} from './limits.js'

/** kith-pair/1 messages (the content of kind-24140 events, as JSON). */
export type PairMessage =
  | { t: 'commit'; c: string }
  | { t: 'nonce'; n: string; epk?: string }
  | { t: 'reveal'; epk: string; n: string }
  | { t: 'confirm-r'; mac: string; box: string }
  | { t: 'confirm-i'; mac: string; box: string }
  | { t: 'part'; box: string }
  | { t: 'ack'; mac: string }
  /** `mac` once the sender holds the handshake keys (abortMac); `detail`: the specific reason. */
  | { t: 'abort'; reason: string; detail?: string; mac?: string }

export interface ProtocolOptions {
  now: number
  random?: (n: number) => Uint8Array
  /** Test-only: a shorter SAS (e.g. 256) to measure grinding. */
  sasModulus?: number
  /** Test-only: false runs the variant without a commitment, to show what it protects. */
  commitment?: boolean
  /** Test-only: false takes the inviter's key from the relay instead of the code. */
  pinInviterKey?: boolean
}

/** What the joiner proves and sends after its person's yes (encrypted to the inviter). */
export interface JoinerProof {
  device: string
  name: string
  sig: string
  /** The new key's consent to the grant it asks for (kith-grants `proof`: this owner, this role). */
  consent: string
}

/**
 * What the inviter sends after both yeses (encrypted to the joiner): the new key's grant and the
 * chain above it, never the fleet's history (revocations, other grants), which the new node
 * syncs from its hub once it holds its grant. Its size is bounded by the chain's depth.
 */
export interface Enrollment {
  grant: NostrEvent
  /** The grants above the issuer (empty when the issuer is the founder), founder first. */
  chain: NostrEvent[]
  fleet: string
  hubs: string[]
  /**
   * Whether the fleet seals, signed (kith-e2e/1, "Turning it on"): the setting in effect and
   * the grants above its author, so a new device knows it before any hub can withhold it.
   * Absent from an older inviter, and when the fleet has no setting.
   */
  sealing?: NostrEvent[]
}

/** At most this many events in an enrollment's `sealing` (a setting and its author's chain). */
export const maxSealingEvents = 16

const hex = (v: unknown, bytes: number): v is string =>
  typeof v === 'string' && v.length === bytes * 2 && /^[0-9a-f]+$/.test(v)

/** Parses an untrusted message; anything unexpected is a protocol violation. */
export function parsePairMessage(value: unknown): PairMessage {
  const m = value as Record<string, unknown> | null
  const bad = () => new PairError('out-of-order', 'malformed pairing message')
  if (typeof m !== 'object' || m === null) throw bad()
  switch (m.t) {
    case 'commit':
      if (hex(m.c, 32)) return { t: 'commit', c: m.c }
      break
    case 'nonce':
      if (hex(m.n, 32) && (m.epk === undefined || hex(m.epk, 33))) {
        return m.epk === undefined ? { t: 'nonce', n: m.n } : { t: 'nonce', n: m.n, epk: m.epk }
      }
      break
    case 'reveal':
      if (hex(m.epk, 33) && hex(m.n, 32)) return { t: 'reveal', epk: m.epk, n: m.n }
      break
    case 'confirm-r':
    case 'confirm-i':
      if (hex(m.mac, 32) && typeof m.box === 'string' && m.box.length < 65536) {
        return { t: m.t, mac: m.mac, box: m.box }
      }
      break
    case 'part':
      if (typeof m.box === 'string' && m.box.length < 65536) return { t: 'part', box: m.box }
      break
    case 'ack':
      if (hex(m.mac, 32)) return { t: 'ack', mac: m.mac }
      break
    case 'abort':
      if (
        typeof m.reason === 'string' &&
        /^[a-z-]{1,32}$/.test(m.reason) &&
        (m.detail === undefined ||
          (typeof m.detail === 'string' && m.detail.length <= maxAbortDetailChars)) &&
        (m.mac === undefined || hex(m.mac, 32))
      ) {
        return {
          t: 'abort',
          reason: m.reason,
          ...(m.detail === undefined ? {} : { detail: m.detail }),
          ...(m.mac === undefined ? {} : { mac: m.mac }),
        }
      }
      break
    default:
  }
  throw bad()
}

function seal(key: Uint8Array, value: unknown): string {
  return nip44Encrypt(JSON.stringify(value), key)
}

function open(key: Uint8Array, box: string): unknown {
  try {
    return JSON.parse(nip44Decrypt(box, key)) as unknown
  } catch {
    throw new PairError('decrypt-failed')
  }
}

/** Codes the other side may report and this side shows as they are. */
const reportable = (reason: string): reason is PairCode_ =>
  reason in pairMessages && !['locked', 'bad-code', 'cancelled', 'unconfirmed'].includes(reason)

/**
 * The other side stopped. With a valid MAC (it holds the handshake keys): its reason, shown with
 * the same words it shows (a Ctrl-C there is "cancelled by the other side"). Without one — no
 * keys yet on either side, or a hub injecting it — it is only an interrupted connection, which
 * does not count toward the lockout; the claimed reason is shown as unverified.
 */
function abortError(
  m: Extract<PairMessage, { t: 'abort' }>,
  authentic: (reason: string, detail: string, mac: string) => boolean,
): PairError {
  const detail = (m.detail ?? '').slice(0, maxAbortDetailChars)
  if (m.mac !== undefined && authentic(m.reason, m.detail ?? '', m.mac)) {
    return new PairError(
      reportable(m.reason) ? m.reason : 'aborted',
      `on the other machine${detail === '' ? '' : `: ${detail}`}`,
      true,
    )
  }
  return new PairError(
    'interrupted',
    `an unverified abort arrived (${m.reason}${detail === '' ? '' : `: ${detail}`})`,
  )
}

/** The abort to send: with a MAC once the handshake keys exist. */
function makeAbort(
  keys: HandshakeKeys | undefined,
  th: Uint8Array | undefined,
  from: 'I' | 'R',
  reason: PairCode_,
  detail: string,
): PairMessage {
  const d = detail.slice(0, maxAbortDetailChars)
  const base = { t: 'abort' as const, reason, ...(d === '' ? {} : { detail: d }) }
  if (keys === undefined || th === undefined) return base
  return { ...base, mac: abortMac(keys.confirm, from, th, reason, d) }
}

/** Splits text into pieces of at most `max` UTF-8 bytes, never inside a character. */
function splitUtf8(text: string, max: number): string[] {
  const parts: string[] = []
  let current = ''
  let bytes = 0
  for (const ch of text) {
    const cp = ch.codePointAt(0)!
    const n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4
    if (bytes + n > max) {
      parts.push(current)
      current = ''
      bytes = 0
    }
    current += ch
    bytes += n
  }
  parts.push(current)
  return parts
}

type InviterState =
  'waiting-commit' | 'waiting-reveal' | 'compare' | 'confirmed-r' | 'sent-confirm' | 'done'

/** The inviter (holds the owner key): makes the code, answers COMMIT, checks REVEAL, grants. */
export class InviterHandshake {
  readonly code: PairingCode
  private state: InviterState = 'waiting-commit'
  private readonly eph: { secret: Uint8Array; pub: string }
  private readonly nI: string
  private commit = ''
  private th: Uint8Array | undefined
  private keys: HandshakeKeys | undefined
  proof: JoinerProof | undefined

  constructor(
    init: { hub: string; owner: string; name: string; role: PairRole; ttlSeconds?: number },
    private readonly opts: ProtocolOptions,
  ) {
    const random = opts.random ?? nobleRandom
    this.eph = ephemeralKey(random)
    this.code = {
      version: 1,
      role: init.role,
      hub: init.hub,
      pid: bytesToHex(random(16)),
      epkI: this.eph.pub,
      qs: bytesToHex(random(16)),
      owner: init.owner,
      name: init.name,
      exp: opts.now + (init.ttlSeconds ?? 300),
    }
    this.nI = bytesToHex(random(32))
  }

  get sas(): string | undefined {
    return this.keys?.sas
  }

  get transcript(): Uint8Array | undefined {
    return this.th
  }

  /** The abort to send the joiner for `reason` (authenticated once the keys exist). */
  abort(reason: PairCode_, detail = ''): PairMessage {
    return makeAbort(this.keys, this.th, 'I', reason, detail)
  }

  /** Handles one message from the joiner; returns the reply to send, if any. */
  handle(m: PairMessage, now: number): PairMessage | undefined {
    if (m.t === 'abort') {
      throw abortError(m, (reason, detail, mac) =>
        this.keys !== undefined && this.th !== undefined
          ? sameMac(mac, abortMac(this.keys.confirm, 'R', this.th, reason, detail))
          : false,
      )
    }
    if (now > this.code.exp && this.state !== 'sent-confirm') throw new PairError('expired')
    const withCommit = this.opts.commitment !== false
    if (m.t === 'commit') {
      // One COMMIT per code: a second one means a second joiner.
      if (this.state !== 'waiting-commit') throw new PairError('third-party')
      this.commit = withCommit ? m.c : ''
      this.state = 'waiting-reveal'
      return this.opts.pinInviterKey === false
        ? { t: 'nonce', n: this.nI, epk: this.eph.pub }
        : { t: 'nonce', n: this.nI }
    }
    if (m.t === 'reveal') {
      if (this.state !== 'waiting-reveal') throw new PairError('out-of-order')
      if (withCommit && commitment(this.code.pid, m.epk, m.n) !== this.commit) {
        throw new PairError('commit-mismatch')
      }
      checkPeerKey(m.epk, this.code.epkI)
      this.derive(m.epk, m.n)
      this.state = 'compare'
      return undefined
    }
    if (m.t === 'confirm-r') {
      if (this.state !== 'compare' || this.keys === undefined || this.th === undefined) {
        throw new PairError('out-of-order')
      }
      if (!sameMac(m.mac, confirmationMac(this.keys.confirm, 'R', this.th)))
        throw new PairError('mac-failed')
      const proof = open(this.keys.joinerToInviter, m.box) as Partial<JoinerProof>
      if (
        !isHex64(proof.device) ||
        typeof proof.name !== 'string' ||
        typeof proof.sig !== 'string' ||
        typeof proof.consent !== 'string'
      ) {
        throw new PairError('bad-proof')
      }
      if (!verifyTranscriptSignature(this.th, proof.sig, proof.device))
        throw new PairError('bad-proof')
      const role = this.code.role === 'owner' ? 'owner' : 'device'
      if (
        !verifyGrantProof({
          issuer: this.code.owner,
          subject: proof.device,
          role,
          proof: proof.consent,
        })
      )
        throw new PairError('bad-proof')
      this.proof = {
        device: proof.device,
        name: [...proof.name].slice(0, maxProposedNameChars).join(''),
        sig: proof.sig,
        consent: proof.consent,
      }
      this.state = 'confirmed-r'
      return undefined
    }
    if (m.t === 'ack') {
      if (this.state !== 'sent-confirm' || this.keys === undefined || this.th === undefined) {
        throw new PairError('out-of-order')
      }
      if (!sameMac(m.mac, confirmationMac(this.keys.confirm, 'ack', this.th)))
        throw new PairError('mac-failed')
      this.state = 'done'
      return undefined
    }
    throw new PairError('out-of-order')
  }

  private derive(epkR: string, nR: string): void {
    const c = this.code
    this.th = transcriptHash({
      role: c.role,
      hub: c.hub,
      pid: c.pid,
      epkI: c.epkI,
      owner: c.owner,
      name: c.name,
      exp: c.exp,
      commit: this.commit,
      nI: this.nI,
      epkR,
      nR,
    })
    this.keys = deriveKeys(ecdhX(this.eph.secret, epkR), c.qs, this.th, this.opts.sasModulus)
    this.eph.secret.fill(0)
  }

  /**
   * After its own person's yes and a valid CONFIRM_R: the encrypted enrollment, as CONFIRM_I and
   * then as many `part` messages as it needs (each box holds "k/n\n" and a piece of its JSON).
   */
  finish(enrollment: Enrollment): PairMessage[] {
    if (this.state !== 'confirmed-r' || this.keys === undefined || this.th === undefined) {
      throw new PairError('out-of-order')
    }
    const pieces = splitUtf8(JSON.stringify(enrollment), enrollmentPartBytes)
    if (pieces.length > maxEnrollmentParts) {
      throw new PairError(
        'too-large',
        `${pieces.length} parts of ${enrollmentPartBytes} bytes; at most ${maxEnrollmentParts}`,
      )
    }
    this.state = 'sent-confirm'
    const keys = this.keys
    const boxes = pieces.map((piece, k) =>
      nip44Encrypt(`${k}/${pieces.length}\n${piece}`, keys.inviterToJoiner),
    )
    return [
      { t: 'confirm-i', mac: confirmationMac(keys.confirm, 'I', this.th), box: boxes[0]! },
      ...boxes.slice(1).map((box): PairMessage => ({ t: 'part', box })),
    ]
  }

  get done(): boolean {
    return this.state === 'done'
  }
}

type JoinerState = 'new' | 'committed' | 'compare' | 'sent-confirm' | 'receiving' | 'done'

/** The joiner (the new device): commits, reveals after the nonce, proves its device key. */
export class JoinerHandshake {
  private state: JoinerState = 'new'
  private readonly eph: { secret: Uint8Array; pub: string }
  private readonly nR: string
  private th: Uint8Array | undefined
  private keys: HandshakeKeys | undefined
  private epkI: string
  /** The enrollment's pieces received so far, and how many there are. */
  private pieces: string[] = []
  private expected = 0

  constructor(
    readonly code: PairingCode,
    private readonly opts: ProtocolOptions,
  ) {
    if (opts.now > code.exp) throw new PairError('expired')
    const random = opts.random ?? nobleRandom
    this.eph = ephemeralKey(random)
    this.nR = bytesToHex(random(32))
    this.epkI = code.epkI
    if (opts.pinInviterKey !== false) checkPeerKey(code.epkI, this.eph.pub)
  }

  get sas(): string | undefined {
    return this.keys?.sas
  }

  get transcript(): Uint8Array | undefined {
    return this.th
  }

  /** The abort to send the inviter for `reason` (authenticated once the keys exist). */
  abort(reason: PairCode_, detail = ''): PairMessage {
    return makeAbort(this.keys, this.th, 'R', reason, detail)
  }

  private abortError(m: Extract<PairMessage, { t: 'abort' }>): PairError {
    return abortError(m, (reason, detail, mac) =>
      this.keys !== undefined && this.th !== undefined
        ? sameMac(mac, abortMac(this.keys.confirm, 'I', this.th, reason, detail))
        : false,
    )
  }

  /**
   * COMMIT to the ephemeral key and nonce. (The test-only variant without a commitment sends a
   * placeholder that binds nothing, so the flow is the same and only the binding is missing.)
   */
  start(): PairMessage {
    if (this.state !== 'new') throw new PairError('out-of-order')
    this.state = 'committed'
    if (this.opts.commitment === false) return { t: 'commit', c: '00'.repeat(32) }
    return { t: 'commit', c: commitment(this.code.pid, this.eph.pub, this.nR) }
  }

  handle(m: PairMessage, now: number): PairMessage | undefined {
    if (m.t === 'abort') throw this.abortError(m)
    if (m.t === 'nonce') {
      if (this.state !== 'committed') throw new PairError('out-of-order')
      if (now > this.code.exp) throw new PairError('expired')
      if (this.opts.pinInviterKey === false) {
        if (m.epk === undefined) throw new PairError('out-of-order')
        checkPeerKey(m.epk, this.eph.pub)
        this.epkI = m.epk
      }
      const withCommit = this.opts.commitment !== false
      this.derive(withCommit ? commitment(this.code.pid, this.eph.pub, this.nR) : '', m.n)
      this.state = 'compare'
      return { t: 'reveal', epk: this.eph.pub, n: this.nR }
    }
    throw new PairError('out-of-order')
  }

  private derive(commit: string, nI: string): void {
    const c = this.code
    this.th = transcriptHash({
      role: c.role,
      hub: c.hub,
      pid: c.pid,
      epkI: this.epkI,
      owner: c.owner,
      name: c.name,
      exp: c.exp,
      commit,
      nI,
      epkR: this.eph.pub,
      nR: this.nR,
    })
    this.keys = deriveKeys(ecdhX(this.eph.secret, this.epkI), c.qs, this.th, this.opts.sasModulus)
    this.eph.secret.fill(0)
  }

  /** After its own person's yes: CONFIRM_R with proof of possession of the new device key. */
  confirm(device: { pubkey: string; secret: Uint8Array; name: string }): PairMessage {
    if (this.state !== 'compare' || this.keys === undefined || this.th === undefined) {
      throw new PairError('out-of-order')
    }
    this.state = 'sent-confirm'
    const proof: JoinerProof = {
      device: device.pubkey,
      name: [...device.name].slice(0, maxProposedNameChars).join(''),
      sig: signTranscript(this.th, device.secret),
      consent: signGrantProof(
        device.secret,
        this.code.owner,
        this.code.role === 'owner' ? 'owner' : 'device',
      ),
    }
    return {
      t: 'confirm-r',
      mac: confirmationMac(this.keys.confirm, 'R', this.th),
      box: seal(this.keys.joinerToInviter, proof),
    }
  }

  /** Opens one piece of the enrollment: "k/n\n" then the text; they must come in order. */
  private piece(box: string): void {
    let text: string
    try {
      text = nip44Decrypt(box, this.keys!.inviterToJoiner)
    } catch {
      throw new PairError('decrypt-failed')
    }
    const m = /^(\d{1,2})\/(\d{1,2})\n/.exec(text)
    const k = Number(m?.[1])
    const n = Number(m?.[2])
    if (m === null || n < 1 || n > maxEnrollmentParts || k !== this.pieces.length) {
      throw new PairError('out-of-order', 'enrollment parts out of order')
    }
    if (k === 0) this.expected = n
    else if (n !== this.expected) throw new PairError('out-of-order', 'enrollment parts disagree')
    this.pieces.push(text.slice(m[0].length))
  }

  /**
   * CONFIRM_I and its parts: checks the MAC, then, once every part is in, that the grant is the
   * pinned owner's, for this key and role, and valid now on the chain sent with it. Returns the
   * enrollment and the ACK then; undefined while parts are still missing.
   */
  accept(
    m: PairMessage,
    device: string,
    now: number,
  ): { enrollment: Enrollment; ack: PairMessage } | undefined {
    if (m.t === 'abort') throw this.abortError(m)
    if (this.keys === undefined || this.th === undefined) throw new PairError('out-of-order')
    if (m.t === 'confirm-i' && this.state === 'sent-confirm') {
      if (!sameMac(m.mac, confirmationMac(this.keys.confirm, 'I', this.th)))
        throw new PairError('mac-failed')
      this.state = 'receiving'
      this.piece(m.box)
    } else if (m.t === 'part' && this.state === 'receiving') {
      this.piece(m.box)
    } else {
      throw new PairError('out-of-order')
    }
    if (this.pieces.length < this.expected) return undefined
    let e: Partial<Enrollment>
    try {
      e = JSON.parse(this.pieces.join('')) as Partial<Enrollment>
    } catch {
      throw new PairError('wrong-owner', 'unreadable enrollment')
    }
    const enrollment = this.check(e, device, now)
    this.state = 'done'
    return {
      enrollment,
      ack: { t: 'ack', mac: confirmationMac(this.keys.confirm, 'ack', this.th) },
    }
  }

  private check(e: Partial<Enrollment>, device: string, now: number): Enrollment {
    const grant = e.grant
    if (
      typeof grant !== 'object' ||
      grant === null ||
      grant.kind !== Kind.Grant ||
      !verifyEventSignature(grant)
    ) {
      throw new PairError('wrong-owner', 'no valid grant')
    }
    let parsed
    try {
      parsed = parseGrant(grant)
    } catch {
      throw new PairError('wrong-owner', 'malformed grant')
    }
    const expectedRole = this.code.role === 'owner' ? 'owner' : 'device'
    if (
      grant.pubkey !== this.code.owner ||
      parsed.subject !== device ||
      parsed.role !== expectedRole
    ) {
      throw new PairError('wrong-owner', 'the grant is not from the pinned owner for this key')
    }
    if (
      !Array.isArray(e.hubs) ||
      !Array.isArray(e.chain) ||
      !isHex64(e.fleet) ||
      !e.chain.every((g) => typeof g === 'object' && g !== null)
    ) {
      throw new PairError('wrong-owner', 'incomplete enrollment')
    }
    // The chain must carry the grant from the fleet's founder down to this key, valid now: the
    // new node then holds a working grant before it has synced anything.
    const verifier = new GrantVerifier({ founder: e.fleet, verifySignature: verifyEventSignature })
    for (const g of [...e.chain, grant]) verifier.add(g)
    const d = verifier.isMember(device, now)
    if (!d.ok || d.chain[d.chain.length - 1]?.id !== grant.id) {
      throw new PairError(
        'wrong-owner',
        d.ok ? 'the grant is not on the chain sent' : `${d.code}: ${d.reason}`,
      )
    }
    const sealing = e.sealing ?? []
    if (
      !Array.isArray(sealing) ||
      sealing.length > maxSealingEvents ||
      !sealing.every(
        (x) =>
          typeof x === 'object' &&
          x !== null &&
          (x.kind === Kind.FleetSetting || x.kind === Kind.Grant) &&
          verifyEventSignature(x),
      )
    )
      throw new PairError('wrong-owner', 'the fleet setting sent is not signed')
    return {
      grant,
      chain: e.chain,
      fleet: e.fleet,
      hubs: e.hubs.filter((h): h is string => typeof h === 'string'),
      ...(sealing.length === 0 ? {} : { sealing }),
    }
  }

  get done(): boolean {
    return this.state === 'done'
  }
}
