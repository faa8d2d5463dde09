import {
  channelOf,
  openObserverFrame,
  type NostrEvent,
  type WorkTool,
} from '../../../browser-core.js'

/**
 * An agent's turn as its observer frames (kind 24142, kith-agents/1) show it: the ACP
 * session/update stream of the turn, decrypted with this device's key, folded into what a
 * person reads: tool calls (with their diffs), the plan, the thoughts and the answer so far.
 */
export interface ToolCall {
  id: string
  title: string
  kind: string
  status: string
  diffs: { path: string; oldText: string | null; newText: string }[]
  text: string[]
  /** Allowed by the host's policy, without asking (kith_auto_allowed). */
  autoAllowed?: string
  /** From the stored answer (its `work` tags): the unified diff of its edits. */
  unified?: string
}

export interface PlanEntry {
  content: string
  status: string
  priority: string
}

export interface Turn {
  prompt: string
  agent: string
  channel: string
  tools: Map<string, ToolCall>
  plan: PlanEntry[]
  thoughts: string
  message: string
  updatedAt: number
}

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)
const str = (v: unknown, fallback = ''): string => (typeof v === 'string' ? v : fallback)

function textOf(content: unknown): string {
  return isObj(content) && content.type === 'text' ? str(content.text) : ''
}

/** Reads a tool call's ACP content: diffs (ACP `diff`) and text blocks. */
function contentOf(tool: ToolCall, content: unknown): void {
  if (!Array.isArray(content)) return
  tool.diffs = []
  tool.text = []
  for (const c of content as unknown[]) {
    if (!isObj(c)) continue
    if (c.type === 'diff' && typeof c.path === 'string' && typeof c.newText === 'string')
      tool.diffs.push({
        path: c.path,
        oldText: typeof c.oldText === 'string' ? c.oldText : null,
        newText: c.newText,
      })
    else if (c.type === 'content') {
      const t = textOf(c.content)
      if (t !== '') tool.text.push(t)
    }
  }
}

/** Folds one ACP session/update (or a host entry) into the turn. */
export function applyUpdate(turn: Turn, update: unknown): void {
  if (!isObj(update)) return
  switch (update.sessionUpdate) {
    case 'tool_call':
    case 'tool_call_update': {
      const id = str(update.toolCallId)
      if (id === '') return
      let tool = turn.tools.get(id)
      if (tool === undefined) {
        tool = { id, title: id, kind: 'other', status: 'pending', diffs: [], text: [] }
        turn.tools.set(id, tool)
      }
      if (typeof update.title === 'string') tool.title = update.title
      if (typeof update.kind === 'string') tool.kind = update.kind
      if (typeof update.status === 'string') tool.status = update.status
      if (update.content !== undefined) contentOf(tool, update.content)
      return
    }
    case 'plan':
      if (Array.isArray(update.entries))
        turn.plan = (update.entries as unknown[]).filter(isObj).map((e) => ({
          content: str(e.content),
          status: str(e.status, 'pending'),
          priority: str(e.priority, 'medium'),
        }))
      return
    case 'agent_thought_chunk':
      turn.thoughts += textOf(update.content)
      return
    case 'agent_message_chunk':
      turn.message += textOf(update.content)
      return
    case 'kith_auto_allowed': {
      const id = str(update.toolCallId)
      const tool = turn.tools.get(id) ?? {
        id,
        title: str(update.title, id),
        kind: str(update.toolKind, 'other'),
        status: 'pending',
        diffs: [],
        text: [],
      }
      tool.autoAllowed = str(update.policy, 'policy')
      turn.tools.set(id, tool)
      return
    }
    default:
  }
}

/**
 * A turn as the agent's answer keeps it (kith-agents/1, "Work"): its tool calls with their last
 * status, diff and output end; no plan, thoughts or streamed text (the answer says the rest).
 */
export function turnFromWork(prompt: string, reply: NostrEvent, work: WorkTool[]): Turn {
  const tools = new Map<string, ToolCall>()
  for (const w of work)
    tools.set(w.id, {
      id: w.id,
      title: w.title,
      kind: w.kind,
      status: w.status,
      diffs: [],
      text: w.output === undefined ? [] : [w.output],
      ...(w.allowedBy === undefined ? {} : { autoAllowed: w.allowedBy }),
      ...(w.diff === undefined ? {} : { unified: w.diff }),
    })
  return {
    prompt,
    agent: reply.pubkey,
    channel: channelOf(reply) ?? 'general',
    tools,
    plan: [],
    thoughts: '',
    message: '',
    updatedAt: reply.created_at,
  }
}

/** Most turns kept (the newest): a page open for days does not grow without bound. */
const maxTurns = 200

export class Turns {
  readonly byPrompt = new Map<string, Turn>()

  constructor(private readonly secret: Uint8Array) {}

  /**
   * A frame addressed to this device (its `p`), from a member (admitted by the caller):
   * decrypted and folded in. Returns the turn, or undefined for a frame that does not decrypt.
   */
  receive(event: NostrEvent): Turn | undefined {
    // Not for this key, tampered with, or not a body: frames are best effort, it is dropped.
    const body = openObserverFrame(event, this.secret)
    if (body === undefined) return undefined
    let turn = this.byPrompt.get(body.prompt)
    if (turn === undefined) {
      turn = {
        prompt: body.prompt,
        agent: event.pubkey,
        channel: channelOf(event) ?? 'general',
        tools: new Map(),
        plan: [],
        thoughts: '',
        message: '',
        updatedAt: event.created_at,
      }
      this.byPrompt.set(body.prompt, turn)
      if (this.byPrompt.size > maxTurns) {
        const oldest = this.byPrompt.keys().next().value
        if (oldest !== undefined) this.byPrompt.delete(oldest)
      }
    }
    // Only the agent the turn belongs to adds to it.
    if (turn.agent !== event.pubkey) return undefined
    for (const u of body.updates) applyUpdate(turn, u)
    turn.updatedAt = Math.max(turn.updatedAt, event.created_at)
    return turn
  }
}
