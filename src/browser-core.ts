/**
 * The protocol core a browser runs (the web device): events and kinds, grants and the fleet
 * state, the wasm verifier, the relay client and the pairing protocol. `npm run check` bundles
 * this file for the browser (scripts/check-browser-core.js) and fails on any Node built-in.
 */
export * from './errors.js'
export * from './events/index.js'
export * from './verify/wasm.js'
export * from './grants/index.js'
export { FleetState } from './grants/fleet-state.js'
export { ChannelBook } from './grants/channels.js'
export { definitionsFirst, type DefinitionsFirst } from './grants/definitions-first.js'
export { personOf, personsOf, fleetPeople, type MemberKey, type Person } from './grants/members.js'
export * from './link/relay-client.js'
export * from './pairing/protocol/session.js'
export * from './pairing/protocol/code.js'
export * from './pairing/protocol/errors.js'
export * from './pairing/protocol/served-by.js'
export * from './events/chat.js'
export * from './events/agent-binding.js'
export * from './events/channel-def.js'
export * from './events/permission-options.js'
export * from './events/permission-request.js'
export * from './events/permission-preview.js'
export * from './events/turn-work.js'
export * from './events/permission-decision.js'
export * from './events/agent-control.js'
export * from './events/push.js'
export * from './events/session-state.js'
export * from './events/session-control.js'
export * from './events/session-start.js'
export * from './link/catch-up.js'
export * from './pairing/relay-lane.js'
export * from './pairing/join-over-lane.js'
export { Names, type Who, type ProfileSource } from './node/names.js'
export { policyAllows, describePolicy, type AgentPolicy } from './grants/policy.js'
export * from './events/e2e-codes.js'
export * from './events/e2e-epoch.js'
export * from './events/e2e-envelope.js'
export * from './events/e2e-rotation.js'
export * from './events/e2e-seal.js'
export * from './events/e2e-setting.js'
export { e2eRecipients, historyShare, isE2eReader } from './grants/e2e-recipients.js'
export * from './grants/e2e-sealing.js'
export { mayAct, type Action, type ActorClass } from './grants/authority.js'
export { decisionStanding, type DecisionContext } from './grants/decision-standing.js'
export { actionOf, fleetActor, mayAdmit, mayPushThrough } from './grants/event-authority.js'
export { judgeHubRevoked, type HubRevokedVerdict } from './grants/hub-revoked.js'
export * from './grants/e2e-keyring.js'
export {
  audit,
  type AuditReport,
  type AuditTurn,
  type AuditFlag,
  type AuditFlagCode,
} from './grants/audit.js'
export { auditText, auditWho } from './grants/audit-text.js'
