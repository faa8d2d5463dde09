import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseChannelDefinition } from '../../src/events/channel-def.js'
import { verifyEventSignature, type NostrEvent } from '../../src/events/event.js'
import { isEphemeralKind, Kind } from '../../src/events/kinds.js'
import { authorityRow, mayAct, type Action, type ActorClass } from '../../src/grants/authority.js'
import { fleetSealing } from '../../src/grants/e2e-sealing.js'
import { FleetState, hValues } from '../../src/grants/fleet-state.js'
import { personOf } from '../../src/grants/members.js'
import { GrantBook } from '../../src/node/grant-book.js'
import { EventStore } from '../../src/store/event-store.js'
import { FleetModel } from '../../src/web/app/lib/fleet.js'
import {
  buildHistory,
  castNames,
  channelNames,
  makeCast,
  scriptArb,
  shuffled,
  split,
} from './fleet-histories.js'

/**
 * Property tests over random fleet histories (issue 28, "Test the whole table"). Each history is
 * a script of real signed events; it is fed, in several orders and splits into batches, to the
 * fleet state as a hub uses it (one event at a time, the refused offered again until nothing
 * changes, as publishers resend), as a node uses it (GrantBook over its store, admitBatch with
 * pending grants held, what was refused offered again as reconciliation does, then a restart
 * that replays the store) and as the web app's core does (FleetModel.intake, offered again as a
 * reconnect does). On every one:
 *  (a) no event is admitted that the authority table forbids its author, with the classes the
 *      author held at the event's date as the admitting side knew them;
 *  (b) membership (grants, revocations, who is a member and as what) and the fleet's sealing
 *      are the same for every order, split and side; a restart rebuilds the same state from
 *      what was stored; node and web app, given the same batches, admit the same events and
 *      agree on every channel; two runs that hold the same events agree on every channel.
 * What (b) does not claim is what kith-channels says depends on the order of learning: a post
 * that arrives before its author's revocation (or before a definition leaving its author out) is
 * taken, one that arrives after is refused.
 */
const cast = makeCast()
const fleet = cast.founder.pk
const nameOf = new Map(castNames.map((n) => [cast[n].pk, n]))

/**
 * The classes `key` held fleet-wide at `at`, as `state` knows its grants: the founder; a hub
 * key; an admin (owner grant with deleg), a person or device (member) or an agent (and member), for each
 * grant no revocation known had ended by `at`; removed when it had grants and none stood then;
 * stranger when it never had one. (Toward an agent, owner/allowed/approver are the host's.)
 */
function classesAt(state: FleetState, key: string, at: number): ActorClass[] {
  if (key === state.founder) return ['founder']
  const effs = state.grants.grantsOf(key)
  if (effs.length === 0) return ['stranger']
  const out = new Set<ActorClass>()
  for (const eff of effs) {
    const ended = state.grants.revokedAt(eff.grant.id)
    if (ended !== undefined && ended <= at) continue
    const g = eff.grant
    if (g.role === 'hub') out.add('hub')
    // As agentActorClasses has it: an agent's key is the agent and a member (what a member
    // may sign, it may; its grant gives it no one to stand above).
    else if (g.role === 'agent') out.add('agent').add('member')
    else if (g.role === 'owner' && g.deleg === true) out.add('admin')
    else out.add('member')
  }
  return out.size === 0 ? ['removed'] : [...out]
}

/**
 * The table's answer, but for one case kith-grants keeps on purpose: a removed person's
 * revocation is kept and changes nothing their removal had not already changed ("Effect": the
 * cascade), so it is not a power the table gives them.
 */
function allows(action: Action, classes: readonly ActorClass[]): boolean {
  if (action === 'revocation' && classes.length === 1 && classes[0] === 'removed') return true
  return mayAct(action, classes)
}

/** The admission row an event is, when admission enforces it (grants are judged at the end). */
function admissionAction(
  state: FleetState,
  e: NostrEvent,
  posters: Map<string, Set<string>>,
): Action | undefined {
  let action: Action | undefined
  switch (e.kind) {
    case Kind.Profile:
      action = 'profile'
      break
    case Kind.ChatMessage:
      action = 'chat.post'
      break
    case Kind.SessionState:
      action = 'session.state'
      break
    case Kind.KeyEnvelope:
      action = 'e2e.envelope'
      break
    case Kind.Revocation:
      action = 'revocation'
      break
    case Kind.ChannelDefinition:
      action = leavesOutPoster(state, e, posters) ? 'channel.define.in-use' : 'channel.define'
      break
    default:
      return undefined
  }
  expect(authorityRow(action).enforcedBy).toContain('admission')
  return action
}

/** A private definition that leaves out a key of another person who posted in the channel. */
function leavesOutPoster(
  state: FleetState,
  e: NostrEvent,
  posters: Map<string, Set<string>>,
): boolean {
  let def
  try {
    def = parseChannelDefinition(e)
  } catch {
    return false
  }
  if (!def.private) return false
  for (const key of posters.get(def.channel) ?? []) {
    if (key === def.author || def.members.includes(key)) continue
    const persons = new Set(
      state.grants
        .grantsOf(key)
        .map((eff) => eff.chain.findLast((g) => g.role === 'owner')?.subject ?? state.founder),
    )
    if (key === state.founder) persons.add(key)
    if (persons.size === 0 || persons.has(def.author)) continue
    if (![...persons].some((p) => def.members.includes(p))) return true
  }
  return false
}

interface Run {
  name: string
  state: FleetState
  admitted: Set<string>
  settings: () => Iterable<NostrEvent>
  violations: string[]
  /** The state rebuilt from what this side stored (a restart); undefined for the web app. */
  restarted?: FleetState
}

/**
 * Watches one FleetState's admissions (every `admit`, those inside `admitBatch` too) and notes
 * any event admitted that the table forbids its author at its date.
 */
function watch(state: FleetState, violations: string[]): void {
  const posters = new Map<string, Set<string>>()
  // Judged when first taken: one offered again (a node re-offers definitions) is not new.
  const taken = new Set<string>()
  const admit = state.admit.bind(state)
  state.admit = (event, now, opts) => {
    if (taken.has(event.id)) return admit(event, now, opts)
    const action = admissionAction(state, event, posters)
    const classes = classesAt(state, event.pubkey, event.created_at)
    const a = admit(event, now, opts)
    // Admitted means stored: one held pending (its signer's grant not known yet) is judged once
    // it is placed, with the rest of the state at the end (grantViolations).
    if (a.ok && a.store && action !== undefined && !allows(action, classes))
      violations.push(
        `${action} by ${nameOf.get(event.pubkey)} (${classes.join('+')}) at ${event.created_at}`,
      )
    if (a.ok && a.store) taken.add(event.id)
    if (a.ok && a.store && !isEphemeralKind(event.kind))
      for (const c of hValues(event)) {
        let set = posters.get(c)
        if (set === undefined) posters.set(c, (set = new Set()))
        set.add(event.pubkey)
      }
    return a
  }
}

function hubRun(name: string, order: readonly NostrEvent[], now: number): Run {
  const violations: string[] = []
  const state = new FleetState({ founder: fleet, verifySignature: verifyEventSignature })
  watch(state, violations)
  const store = new EventStore(':memory:')
  const admitted = new Set<string>()
  let waiting = [...order]
  let progress = true
  while (progress) {
    progress = false
    const next: NostrEvent[] = []
    for (const e of waiting) {
      const a = state.admit(e, now)
      if (!a.ok) {
        next.push(e)
        continue
      }
      progress = true
      if (a.store) {
        store.insertBatch([e])
        admitted.add(e.id)
      }
    }
    waiting = next
  }
  const restarted = new FleetState({ founder: fleet, verifySignature: verifyEventSignature })
  restarted.replay({
    authority: [...store.eventsOfKind(Kind.Grant), ...store.eventsOfKind(Kind.Revocation)],
    definitions: store.allVersionsOfKind(Kind.ChannelDefinition),
    firsts: store.earliestInChannels(),
    legacy: store.legacyVersionIds(Kind.ChannelDefinition),
  })
  return {
    name,
    state,
    admitted,
    settings: () => store.allVersionsOfKind(Kind.FleetSetting),
    violations,
    restarted,
  }
}

/** As the node takes what its links bring (node/intake/admit.ts). */
function nodeRun(name: string, batches: readonly NostrEvent[][], now: number): Run {
  const violations: string[] = []
  const store = new EventStore(':memory:')
  const book = new GrantBook(store, fleet)
  book.verifier.recordAccepted = true
  watch(book.state, violations)
  const admitted = new Set<string>()
  // What was refused comes back with reconciliation (NIP-77: what the hub holds that this node
  // lacks), round after round, until a round takes nothing more.
  const reconcile = [...batches.flat()]
  for (let before = -1, i = 0; admitted.size !== before; i++) {
    before = admitted.size
    for (const batch of i === 0 ? batches : [reconcile]) take(batch)
  }
  function take(batch: readonly NostrEvent[]) {
    const known = store.knownIds(batch.map((e) => e.id))
    const fresh = batch.filter(
      (e) =>
        !known.has(e.id) ||
        e.kind === Kind.Grant ||
        e.kind === Kind.Revocation ||
        e.kind === Kind.ChannelDefinition,
    )
    const keep: NostrEvent[] = []
    // As the node admits (node/intake/admit.ts): a reader takes what a since-revoked key signed while it stood.
    for (const { event, admission } of book.state.admitBatch(fresh, now, {
      keepPending: true,
      history: true,
    })) {
      if (!admission.ok || !admission.store || isEphemeralKind(event.kind)) continue
      keep.push(event)
    }
    book.keep(keep)
    const promoted = book.verifier.drainPromoted()
    book.keep(promoted)
    book.verifier.drainAccepted()
    for (const e of [...keep, ...promoted]) admitted.add(e.id)
  }
  const restarted = new GrantBook(store, fleet).state
  return {
    name,
    state: book.state,
    admitted,
    settings: () => store.allVersionsOfKind(Kind.FleetSetting),
    violations,
    restarted,
  }
}

function webRun(name: string, batches: readonly NostrEvent[][]): Run {
  const violations: string[] = []
  const me = cast.aliceLaptop
  const model = new FleetModel(me.pk, fleet, me.sk, [])
  watch(model.state, violations)
  const admitted = new Set<string>()
  const settings = new Map<string, NostrEvent>()
  // As the node: what was refused is offered again (the next connect's fetch) until nothing new.
  const again = [...batches.flat()]
  for (let before = -1, i = 0; admitted.size !== before; i++) {
    before = admitted.size
    for (const batch of i === 0 ? batches : [again]) {
      for (const e of model.intake(batch, { trusted: true })) admitted.add(e.id)
      for (const e of batch) if (e.kind === Kind.FleetSetting) settings.set(e.id, e)
    }
  }
  return {
    name,
    state: model.state,
    admitted,
    // The app takes every setting it is offered and judges it by its author's standing then.
    settings: () => settings.values(),
    violations,
  }
}

const named = (pk: string | undefined) => (pk === undefined ? '-' : (nameOf.get(pk) ?? pk))

function authorityOf(state: FleetState, now: number) {
  return {
    grants: state.grants
      .allGrants()
      .map((g) => g.id)
      .sort(),
    // Which revocations are kept may depend on order (kith-grants: one naming a grant that
    // arrives later is held, the same one arriving after it is refused; either way it revokes
    // nothing), so they are compared by what they do: who is a member, and as what.
    keys: castNames.map((n) => {
      const pk = cast[n].pk
      return `${n}: member ${state.grants.isMember(pk, now).ok}, person ${named(personOf(state.grants, pk, now))}, ${classesAt(state, pk, now).join('+')}`
    }),
  }
}

function channelsOf(state: FleetState, now: number) {
  return channelNames.map((c) => {
    const d = state.channels.definition(c, now)
    const readers = castNames.filter((n) => state.channels.isMember(cast[n].pk, c, now))
    return `#${c}: ${d === undefined ? 'open' : `${d.id.slice(0, 8)} ${d.private ? 'private' : 'open'}`}; readers ${readers.join(' ')}`
  })
}

function sealingOf(run: Run, now: number) {
  const s = fleetSealing(run.settings(), run.state.channels, fleet, now)
  return { on: s.on, decidedBy: s.decidedBy?.id }
}

/** Grants in effect, and revocations kept, whose signer the table would not let grant that role at the grant's date. */
function grantViolations(state: FleetState): string[] {
  const out: string[] = []
  for (const g of state.grants.allGrants()) {
    if (state.grants.isRevokedGrant(g)) continue
    const action: Action =
      g.role === 'owner' ? (g.deleg === true ? 'grant.admin' : 'grant.owner') : `grant.${g.role}`
    const classes = classesAt(state, g.issuer, g.createdAt)
    if (!mayAct(action, classes))
      out.push(`${action} of ${named(g.subject)} by ${named(g.issuer)} (${classes.join('+')})`)
  }
  for (const r of state.grants.allRevocations()) {
    const classes = classesAt(state, r.revoker, r.createdAt)
    if (!allows('revocation', classes))
      out.push(`revocation by ${named(r.revoker)} (${classes.join('+')}) kept`)
  }
  return out
}

/** The setting that decides the fleet's sealing must be one the table lets its author make. */
function settingViolations(run: Run, now: number): string[] {
  const s = fleetSealing(run.settings(), run.state.channels, fleet, now)
  if (s.decidedBy === undefined) return []
  const classes = classesAt(run.state, s.decidedBy.pubkey, s.decidedBy.created_at)
  return mayAct('fleet.setting', classes)
    ? []
    : [`fleet.setting by ${named(s.decidedBy.pubkey)} (${classes.join('+')}) decides`]
}

function runAll(history: NostrEvent[], seeds: [number, number, number], now: number): Run[] {
  const [a, b, c] = seeds
  const orderB = shuffled(history, a)
  const orderC = shuffled(history, b)
  const batchesB = split(orderB, c, 5)
  const batchesC = orderC.map((e) => [e])
  return [
    hubRun('hub, written order', history, now),
    hubRun('hub, shuffled', orderB, now),
    nodeRun('node, one batch', [history], now),
    nodeRun('node, shuffled in batches', batchesB, now),
    nodeRun('node, shuffled one by one', batchesC, now),
    webRun('web, shuffled in batches', batchesB),
    webRun('web, shuffled one by one', batchesC),
  ]
}

// Small enough for the unit tier (a few seconds); a failure prints its seed to replay it.
const numRuns = Number(process.env.PROPS_RUNS ?? 12)

describe('random fleet histories (fast-check)', () => {
  it('every side admits only what the table allows, and every order and split gives one state', () => {
    const now = Math.floor(Date.now() / 1000)
    fc.assert(
      fc.property(scriptArb(20), fc.tuple(fc.nat(), fc.nat(), fc.nat()), (script, seeds) => {
        const history = buildHistory(cast, script, now - 3_000)
        const runs = runAll(history, seeds, now)
        // (a) Nothing admitted that the table forbids its author at its date.
        for (const run of runs) {
          const found = [
            ...run.violations,
            ...grantViolations(run.state),
            ...settingViolations(run, now),
          ]
          expect({ run: run.name, found }).toEqual({ run: run.name, found: [] })
        }
        // (b) One state. Grants and revocations are compared as the membership they make.
        const authority = new Set(
          history
            .filter((e) => e.kind === Kind.Grant || e.kind === Kind.Revocation)
            .map((e) => e.id),
        )
        for (const run of runs) for (const id of authority) run.admitted.delete(id)
        const first = runs[0]!
        for (const run of runs) {
          expect({ run: run.name, authority: authorityOf(run.state, now) }).toEqual({
            run: run.name,
            authority: authorityOf(first.state, now),
          })
          expect({ run: run.name, sealing: sealingOf(run, now) }).toEqual({
            run: run.name,
            sealing: sealingOf(first, now),
          })
          if (run.restarted !== undefined)
            expect({
              run: `${run.name}, restarted`,
              authority: authorityOf(run.restarted, now),
              channels: channelsOf(run.restarted, now),
            }).toEqual({
              run: `${run.name}, restarted`,
              authority: authorityOf(run.state, now),
              channels: channelsOf(run.state, now),
            })
        }
        // The node and the web app, given the same batches, take the same events.
        for (const [node, web] of [
          [runs[3]!, runs[5]!],
          [runs[4]!, runs[6]!],
        ] as const) {
          expect({ web: web.name, admitted: [...web.admitted].sort() }).toEqual({
            web: web.name,
            admitted: [...node.admitted].sort(),
          })
          expect(channelsOf(web.state, now)).toEqual(channelsOf(node.state, now))
        }
        // Whoever holds the same events decides every channel the same way.
        for (const x of runs)
          for (const y of runs) {
            if (x === y || !sameSet(x.admitted, y.admitted)) continue
            expect({ run: y.name, channels: channelsOf(y.state, now) }).toEqual({
              run: y.name,
              channels: channelsOf(x.state, now),
            })
          }
      }),
      { numRuns, ...(process.env.PROPS_SEED ? { seed: Number(process.env.PROPS_SEED) } : {}) },
    )
  })
})

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  return a.size === b.size && [...a].every((x) => b.has(x))
}
