import type { WorkTool } from '../events/turn-work.js'
// The bridge's option shapes, apart from agent-bridge.ts so that the loader and the permission
// requests it uses can name them without importing the bridge back (no cycle).

/** How an agent reply is tagged: a `notice` leaves its prompt unanswered (kith-agents/1). */
export interface ReplyOptions {
  notice?: boolean
  /**
   * How the prompt ended when it got no answer: `refused` (policy, project), `failed` (with the
   * turn's failure code) or `cancelled`, as an `outcome` tag (kith-agents, "Outcome").
   */
  outcome?: ['refused' | 'failed' | 'cancelled', string]
  /** The turn's tool calls, kept with the answer as `work` tags (events/turn-work.ts). */
  work?: readonly WorkTool[]
}

export interface AgentBridgeOptions {
  /** How long a permission request waits for a person before it is answered cancelled. */
  permissionTimeoutMs?: number
  /** After a cancel, how long an agent may take to end its turn before it is killed. */
  cancelGraceMs?: number
  /** Agent watchdog: a silent turn ends after this long (default 15 min)… */
  agentIdleTimeoutMs?: number
  /** …and no turn runs longer than this (default 2 h). */
  agentTurnCapMs?: number
}
