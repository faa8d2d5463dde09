import { KithError } from '../errors.js'

/**
 * How a hosted agent's tool calls are approved, fixed when the agent is added and kept in its
 * record (identity/agents.ts); acp/auto-allow.ts applies it:
 * - `ask`: every `session/request_permission` goes to a person (kind 4142);
 * - `allow-reads`: calls of a read-only tool kind are allowed by the host at once;
 * - `allow-all`: every call is allowed by the host at once.
 * The agent itself is always pinned to a mode that asks, so the host sees every call.
 */
export type PermissionsMode = 'ask' | 'allow-reads' | 'allow-all'

export const permissionsModes: readonly PermissionsMode[] = ['ask', 'allow-reads', 'allow-all']

export function parsePermissionsMode(text: unknown): PermissionsMode {
  if (typeof text === 'string' && (permissionsModes as readonly string[]).includes(text)) {
    return text as PermissionsMode
  }
  throw new KithError(
    'usage',
    `--permissions is ${permissionsModes.join(', ')}; got ${JSON.stringify(text)}`,
  )
}
