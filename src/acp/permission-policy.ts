import { KithError } from '../errors.js'
import type { PermissionAsk } from './agent-process.js'

/**
 * How a hosted agent's tool calls are approved, fixed when the agent is added:
 * - `ask`: every `session/request_permission` goes to a person (kind 4142);
 * - `allow-reads`: calls of a read-only tool kind are allowed by the host at once;
 * - `allow-all`: every call is allowed by the host at once.
 * The agent itself is always pinned to a mode that asks, so the host sees every call.
 */
export type PermissionsMode = 'ask' | 'allow-reads' | 'allow-all'

export const permissionsModes: readonly PermissionsMode[] = ['ask', 'allow-reads', 'allow-all']

/** ACP tool kinds that only look (no edit, delete, move, execute, or other side effect). */
export const readToolKinds: ReadonlySet<string> = new Set(['read', 'search', 'think', 'fetch'])

export function parsePermissionsMode(text: unknown): PermissionsMode {
  if (typeof text === 'string' && (permissionsModes as readonly string[]).includes(text)) {
    return text as PermissionsMode
  }
  throw new KithError(
    'usage',
    `--permissions is ${permissionsModes.join(', ')}; got ${JSON.stringify(text)}`,
  )
}

/**
 * The option the host answers on its own under `mode`, or undefined when a person must be
 * asked. The option is chosen by its ACP `kind` (`allow_once`), never by a guessed optionId; an
 * ask that offers no `allow_once` option goes to a person.
 */
export function autoAllowOption(mode: PermissionsMode, ask: PermissionAsk): string | undefined {
  if (mode === 'ask') return undefined
  if (mode === 'allow-reads' && !readToolKinds.has(ask.toolKind)) return undefined
  return ask.options.find((o) => o.kind === 'allow_once')?.optionId
}

/**
 * A call the host allowed on its own, as an entry of the turn's observer frames (a Kith entry,
 * not an ACP update type), so that it is seen, not silent.
 */
export function autoAllowedUpdate(
  mode: PermissionsMode,
  ask: PermissionAsk,
  optionId: string,
): Record<string, string> {
  return {
    sessionUpdate: 'kith_auto_allowed',
    toolCallId: ask.toolCallId,
    title: ask.title,
    toolKind: ask.toolKind,
    optionId,
    policy: mode,
  }
}
