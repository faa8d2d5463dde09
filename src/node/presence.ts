import { agentStates, type ReportedAgentState } from '../events/presence.js'

/**
 * Presence (kind 24141, kith-chat/1) as the node uses it: made, read and judged in
 * events/presence.ts (the web app asks the same module). A node sends its own when a link comes
 * up, when one of its agents changes state, every `presenceIntervalSeconds`, and `offline` when
 * it stops; it keeps what it hears in memory only (presence is ephemeral: after a restart it
 * knows again within one interval, or at once from the devices that answer its own first
 * presence).
 */
export {
  agentStates,
  isOnline,
  makePresence,
  maxPresenceAgents,
  offlineAfterIntervals,
  PresenceBook,
  type AgentReport,
  type DevicePresence,
  type PresenceAgent,
  type ReportedAgentState,
} from '../events/presence.js'
export { presenceAnswerMs, presenceIntervalSeconds } from './timings.js'

/** An AgentHost state as presence reports it: not yet spawned is ready (idle) to a prompter. */
export function reportedState(state: string): ReportedAgentState {
  if (state === 'stopped') return 'idle'
  return (agentStates as readonly string[]).includes(state) ? (state as ReportedAgentState) : 'idle'
}
