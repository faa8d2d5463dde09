import type { AgentHost } from '../acp/host.js'
import type { EventTemplate, NostrEvent } from '../events/event.js'
import type { AgentRecord } from '../identity/agents.js'
import type { Identity } from '../identity/keys.js'
import type { HubLink } from '../link/hub-link.js'
import type { NodeStore } from '../store/node-store.js'
import type { GrantBook } from './grant-book.js'
import type { Names } from '../grants/names.js'
import type { AgentReport } from './presence.js'

/** What the agent bridge uses of the node it runs in; links and intake stay with the node. */
export interface NodeContext {
  readonly id: Identity
  readonly store: NodeStore
  readonly book: GrantBook
  readonly names: Names
  /** The node's own array: links are added to it after the bridge exists. */
  readonly links: readonly HubLink[]
  readonly log: (line: string) => void
  now(): number
  /** Once true the store may be closed: late timers and callbacks must not write. */
  stopped(): boolean
  /**
   * Signs a channel event as this node sends it: sealed when the fleet encrypts (kith-e2e/1,
   * node/e2e-keys.ts), the event as made coming back under the sealed id. Absent: signEvent.
   */
  sign?(template: EventTemplate, secret: Uint8Array): NostrEvent
  /** Whether the fleet seals (kith-e2e/1): what events show in the clear depends on it. */
  seals?(): boolean
  /** Puts a signed event in the outbox (sent on the next pump). */
  enqueue(event: NostrEvent): void
  /** Shows an event to this node's chat listeners. */
  emit(event: NostrEvent): void
  /** Sends the outbox on every link that is up. */
  pump(): void
  /** A hosted agent's state changed (or an agent came or went): presence tells the fleet. */
  agentStatesChanged(): void
  /** An agent hosted elsewhere, as its device's presence last reported it. */
  agentReport(agent: string): AgentReport | undefined
}

/** An agent's key as the node signs with it (see agent-signer.ts). */
export interface AgentKey {
  record: AgentRecord
  secret: Uint8Array
  /**
   * Why this node signs nothing more for it (its key was revoked, this node was removed or is
   * stopping): set before its key is wiped, so a turn still ending cannot sign with a zeroed key.
   */
  retired?: string
}

/** An agent this node hosts. */
export interface HostedAgent extends AgentKey {
  host: AgentHost
}
