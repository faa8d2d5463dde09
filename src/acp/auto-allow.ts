import type { PermissionsMode } from '../identity/permissions-mode.js'
import type { PermissionAsk } from './agent-process.js'

// The tool calls the host allows on its own under an agent's permissions mode; every other call
// goes to a person.

// The mode itself is part of an agent's record, so it lives in identity/.
export {
  parsePermissionsMode,
  permissionsModes,
  type PermissionsMode,
} from '../identity/permissions-mode.js'

/** ACP tool kinds that only look (no edit, delete, move, execute, or other side effect). */
export const readToolKinds: ReadonlySet<string> = new Set(['read', 'search', 'think', 'fetch'])

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
