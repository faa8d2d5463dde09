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
export { personOf, personsOf, fleetPeople, type MemberKey, type Person } from './grants/members.js'
export * from './link/relay-client.js'
export * from './pairing/protocol/session.js'
export * from './pairing/protocol/code.js'
export * from './pairing/protocol/errors.js'
export * from './events/chat.js'
export * from './events/agent-binding.js'
export * from './events/channel-def.js'
export * from './events/permission-request.js'
export * from './events/permission-decision.js'
export * from './events/agent-control.js'
export * from './events/push.js'
export * from './link/catch-up.js'
export * from './pairing/relay-lane.js'
export * from './pairing/join-over-lane.js'
export { Names, type Who, type ProfileSource } from './node/names.js'
export { policyAllows, describePolicy, type AgentPolicy } from './grants/policy.js'
