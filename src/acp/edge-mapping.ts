import type * as Acp from '@agentclientprotocol/sdk'
import type { NostrEvent } from '../events/event.js'
import type { PermissionRequest } from '../events/permission-request.js'
import type { SessionState } from '../events/session-state.js'
import type { SessionAction } from '../events/session-control.js'

/**
 * The mapping between ACP and Kith's events at the edge (kith-agents, "ACP at the edge"), as pure
 * functions: what `kith acp` sends for an editor's request and what it gives the editor for an
 * event. test/vectors/acp-edge.json holds them as vectors for other implementations.
 */

/** The text an editor's prompt carries (text blocks, and links as their URIs). */
export function promptText(blocks: readonly Acp.ContentBlock[]): string {
  return blocks
    .map((b) => {
      if (b.type === 'text') return b.text
      if (b.type === 'resource_link') return b.uri
      if (b.type === 'resource' && 'text' in b.resource) return b.resource.text
      return ''
    })
    .filter((t) => t !== '')
    .join('\n')
}

/**
 * The blocks of an editor's prompt that a Kith prompt cannot carry (it is text): images, audio,
 * and embedded resources whose content is binary (`blob`). Each is named by its type (a binary
 * resource as `resource:blob`), in prompt order. `kith acp` refuses such a prompt as a whole
 * (`-32602`, data.reason `uncarried-content`) rather than send the agent a prompt with parts
 * silently missing: the person would believe the agent saw the screenshot.
 */
export function uncarriedContent(blocks: readonly Acp.ContentBlock[]): string[] {
  return blocks.flatMap((b) => {
    if (b.type === 'image' || b.type === 'audio') return [b.type]
    if (b.type === 'resource' && !('text' in b.resource)) return ['resource:blob']
    return []
  })
}

/** The JSON-RPC error data of a refused prompt (code -32602), as `kith acp` answers it. */
export function uncarriedRefusal(uncarried: readonly string[]): {
  reason: 'uncarried-content'
  uncarried: string[]
  message: string
} {
  return {
    reason: 'uncarried-content',
    uncarried: [...uncarried],
    message: `Kith carries prompts as text: ${[...new Set(uncarried)].join(', ')} cannot reach the agent; send the prompt without them (attach a file as a path or a link instead)`,
  }
}

/**
 * What of the agent's reply (kind 9) the editor was not streamed (the frames are best effort).
 * The host may lay the reply out apart from how it streamed (codex-acp's configuration warning
 * becomes its own paragraph), so whitespace does not count when matching; a reply that does not
 * continue what streamed is given whole, as its own paragraph.
 */
export function unstreamedRest(streamed: string, reply: string): string {
  if (reply.startsWith(streamed)) return reply.slice(streamed.length)
  const want = streamed.replace(/\s+/g, '')
  let i = 0
  let j = 0
  while (j < want.length && i < reply.length) {
    const c = reply[i]!
    if (/\s/.test(c)) i++
    else if (c === want[j]) {
      i++
      j++
    } else break
  }
  if (j === want.length) return reply.slice(i).trim() === '' ? '' : reply.slice(i)
  return streamed === '' ? reply : `\n\n${reply}`
}

/** How a turn ended, from the agent's reply (its `outcome` tag, kith-agents "Outcome"). */
export function stopReasonOf(reply: Pick<NostrEvent, 'tags'>): Acp.StopReason {
  const outcome = reply.tags.find((t) => t[0] === 'outcome')?.[1]
  if (outcome === 'cancelled') return 'cancelled'
  if (outcome === 'refused') return 'refusal'
  return 'end_turn'
}

/** A mode, model or other option an editor chose for a session. */
export interface Choice {
  mode?: string
  model?: string
  options?: Record<string, string>
}

/**
 * A session state (kind 34150) as ACP's answer to session/new, load and set_config_option: the
 * modes, and the model and other options as select config options. What the host reports is
 * what its agent said, so an editor's menus show the remote agent's own choices.
 */
export function acpSettingsOf(
  state: SessionState | undefined,
  chosen: Choice = {},
): { modes?: Acp.SessionModeState; configOptions?: Acp.SessionConfigOption[] } {
  if (state === undefined) return {}
  const mode = chosen.mode ?? state.mode
  const model = chosen.model ?? state.model
  const configOptions: Acp.SessionConfigOption[] = []
  if (model !== undefined && (state.models ?? []).length > 0)
    configOptions.push({
      id: 'model',
      name: 'Model',
      type: 'select',
      category: 'model',
      currentValue: model,
      options: (state.models ?? []).map((value) => ({ value, name: value })),
    })
  for (const o of state.options ?? [])
    configOptions.push({
      id: o.id,
      name: o.name,
      type: 'select',
      currentValue: chosen.options?.[o.id] ?? o.value,
      options: o.values.map((value) => ({ value, name: value })),
    })
  return {
    ...(mode !== undefined && (state.modes ?? []).length > 0
      ? { modes: { currentModeId: mode, availableModes: state.modes ?? [] } }
      : {}),
    ...(configOptions.length > 0 ? { configOptions } : {}),
  }
}

/** A permission request (4142) as the editor's `session/request_permission`. */
export function permissionParams(
  card: PermissionRequest,
  sessionId: string,
): Acp.RequestPermissionRequest {
  return {
    sessionId,
    toolCall: {
      toolCallId: card.toolCallId,
      title: card.title,
      kind: card.toolKind as Acp.ToolKind,
      // What the person approves: the diff, command or path the card shows on every surface.
      ...(card.preview === undefined
        ? {}
        : { content: [{ type: 'content', content: { type: 'text', text: card.preview } }] }),
    },
    options: card.options.map((o) => ({
      optionId: o.optionId,
      name: o.name,
      kind: o.kind as Acp.PermissionOptionKind,
    })),
  }
}

/** An editor's `session/set_config_option` as a choice: the model, or another option. */
export function choiceOf(configId: string, value: string): Choice {
  return configId === 'model' ? { model: value } : { options: { [configId]: value } }
}

/** A choice as the session request (4150) that makes it. */
export function setRequestOf(choice: Choice): SessionAction {
  return { action: 'set', ...choice }
}
