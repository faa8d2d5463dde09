import type { NostrEvent } from '../../events/event.js'
import type { NodeStore } from '../../store/node-store.js'
import type { VerifyResult } from '../../verify/result.js'
import type { E2eKeys } from '../e2e-keys.js'
import type { GrantBook } from '../grant-book.js'

/** Where the kind → handler table (handlers.ts) hands events: the node's parts, one verb each. */
export interface IntakeTargets {
  /** Shown to control-socket subscribers and the notifier (chat, cards, decisions). */
  show(event: NostrEvent): void
  /** A web device's push subscription, for the notifier. */
  observePush(event: NostrEvent): void
  /** A chat message, for the agents hosted here (a mention is a prompt). */
  dispatch(event: NostrEvent): void
  /** A decision on a card an agent hosted here is waiting on. */
  applyDecision(event: NostrEvent): void
  /** A cancel for an agent hosted here. */
  applyControl(event: NostrEvent): void
  /** A session request for an agent hosted here. */
  applySessionControl(event: NostrEvent): void
  /** Another device's presence. */
  presence(event: NostrEvent): void
  /** An observer frame addressed to this device (kith watch). */
  frame(event: NostrEvent): void
}

/** What the intake stages use of the node they run in (KithNode makes it). */
export interface IntakeContext {
  readonly store: NodeStore
  readonly book: GrantBook
  readonly e2e: Pick<E2eKeys, 'open' | 'reopen'>
  readonly targets: IntakeTargets
  verify(event: NostrEvent): Promise<VerifyResult>
  log(line: string): void
  now(): number
  stopped(): boolean
  /** Queues newly accepted grants and revocations for every hub (kith-grants, "Propagation"). */
  republish(events: readonly NostrEvent[]): void
  /** The fleet's authority changed: membership is enforced again, keys and verdicts follow. */
  authorityChanged(): void
}
