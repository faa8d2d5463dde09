import { randomBytes } from 'node:crypto'
import { Readable, Writable } from 'node:stream'
import type * as Acp from '@agentclientprotocol/sdk'
import type { NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import { outcomeOf, saysTurnGoesOn, threadOf } from '../events/chat.js'
import { parsePermissionRequest } from '../events/permission-request.js'
import type { SessionState } from '../events/session-state.js'
import type { SessionAction } from '../events/session-control.js'
import type { SessionStart } from '../events/session-start.js'
import {
  acpSettingsOf,
  choiceOf,
  permissionParams,
  promptText,
  setRequestOf,
  stopReasonOf,
  uncarriedContent,
  uncarriedRefusal,
  unstreamedRest,
  type Choice,
} from './edge-mapping.js'

/**
 * `kith acp`: an ACP agent on stdio whose sessions are threads with an agent somewhere in the
 * fleet (kith-agents, "ACP at the edge"). Every prompt is a message this device signs, every
 * answer to a permission request a decision this device signs; the remote agent's updates come
 * back as its observer frames. The editor's own capabilities (fs/*, terminal/*) are never used:
 * the agent works with its own tools on the machine it runs on.
 */

/** A message the node passes on (its control socket's `chat`), as far as this edge reads it. */
interface ChatItem {
  event: NostrEvent
}

/** A slice of a turn's updates (the control socket's `frame`), as far as this edge reads it. */
interface WatchFrame {
  prompt: string
  updates: unknown[]
}

/**
 * The control methods this edge calls, as far as it reads them: a part of the node's
 * `ControlMethods` (node/control-methods.ts, a layer above this one), which
 * cli/control-client.ts checks this view against at compile time.
 */
export interface EdgeMethods {
  sessions: { params: Record<string, never>; result: SessionState[] }
  history: { params: { channel: string; limit: number }; result: ChatItem[] }
  send: {
    params: { channel: string; text: string; reply?: string; session?: SessionStart }
    result: { event: NostrEvent }
  }
  decide: { params: { request: string; option: string }; result: unknown }
  cancel: { params: { channel: string; agent: string; prompt: string }; result: unknown }
  'session-request': { params: { session: string; request: SessionAction }; result: { id: string } }
  'session-answer': { params: { request: string }; result: NostrEvent | null }
  subscribe: { params: { channel: string }; result: unknown }
  watch: { params: { agent: string }; result: unknown }
}

/** The node's notifications this edge follows, as far as it reads them (`ControlNotifications`). */
export interface EdgeNotifications {
  chat: ChatItem
  frame: WatchFrame
}

/** What this adapter needs of the local node (its control socket), typed by `EdgeMethods`. */
export interface NodeApi {
  request<M extends keyof EdgeMethods>(
    method: M,
    ...params: Record<string, never> extends EdgeMethods[M]['params']
      ? [params?: EdgeMethods[M]['params']]
      : [params: EdgeMethods[M]['params']]
  ): Promise<EdgeMethods[M]['result']>
  on<N extends keyof EdgeNotifications>(method: N, fn: (params: EdgeNotifications[N]) => void): void
}

/** Where editors' session ids are kept (KITH_HOME/acp-sessions.json): the thread each became, '' before its first prompt. */
export interface SessionBook {
  get(sessionId: string): string | undefined
  set(sessionId: string, root: string): void
}

/** What one editor connection relays: to which agent, in which channel and project. */
export interface EdgeAgentCore {
  node: NodeApi
  /** The agent's name as a mention names it, and its key. */
  agent: { name: string; pubkey: string }
  channel: string
  /** Start new sessions in this project of the host (and a worktree of it). */
  project?: string
  worktree?: boolean
  book: SessionBook
  log: (line: string) => void
  /** Called when the editor's connection closes. */
  onClose?: () => void
}

export interface EdgeAgentOptions extends EdgeAgentCore {
  input: Readable
  output: Writable
}

interface Turn {
  prompt: string
  sessionId: string
  streamed: string
  cards: Set<string>
  finish: (reason: Acp.StopReason) => void
}

/** `kith acp` on stdio: one editor, until it closes the pipe. */
export async function serveEdgeAgent(opts: EdgeAgentOptions): Promise<void> {
  const acp = await import('@agentclientprotocol/sdk')
  const conn = edgeAgentApp(acp, opts).connect(
    acp.ndJsonStream(
      Writable.toWeb(opts.output) as WritableStream<Uint8Array>,
      Readable.toWeb(opts.input) as ReadableStream<Uint8Array>,
    ),
  )
  await conn.closed
}

/**
 * The ACP agent app of one editor connection (stdio, or the remote transport `kith up` serves):
 * it starts following the channel and the agent's frames when the connection opens.
 */
export function edgeAgentApp(acp: typeof Acp, opts: EdgeAgentCore): Acp.AgentApp {
  const { node, agent, channel, book } = opts
  /** ACP session id → the thread root (undefined until its first prompt). */
  const roots = new Map<string, string | undefined>()
  const turns = new Map<string, Turn>()
  // The editor's side of the connection, set once it is made (handlers run only after).
  const peer: { client?: Acp.AgentContext } = {}

  // Updates are the remote agent's own session/update payloads, passed on as they came.
  const update = (sessionId: string, u: unknown) =>
    peer.client?.notify(acp.methods.client.session.update, {
      sessionId,
      update: u as Acp.SessionUpdate,
    })

  node.on('frame', (frame) => {
    const turn = turns.get(frame.prompt)
    if (turn === undefined) return
    for (const u of frame.updates) {
      // Kith's own markers (kith_turn) ride in the same frames; an editor gets ACP's updates.
      if (!acpUpdates.has((u as { sessionUpdate?: string }).sessionUpdate ?? '')) continue
      const text = agentText(u)
      if (text !== undefined) turn.streamed += text
      void update(turn.sessionId, u)
    }
  })
  node.on('chat', ({ event }) => {
    if (event.pubkey !== agent.pubkey) return
    if (event.kind === Kind.PermissionRequest) {
      void askEditor(event)
      return
    }
    // A notice whose outcome says the turn goes on (an answer to a card not acted on) ends none.
    if (event.kind !== Kind.ChatMessage || saysTurnGoesOn(event)) return
    const turn = turns.get(threadOf(event).parent ?? '')
    if (turn === undefined) return
    // What the frames did not bring (they are best effort), from the reply itself.
    const rest = unstreamedRest(turn.streamed, event.content)
    if (rest !== '')
      void update(turn.sessionId, {
        sessionUpdate: 'agent_message_chunk',
        content: { type: 'text', text: rest },
      })
    turns.delete(turn.prompt)
    void tellSettings(turn.sessionId).finally(() => turn.finish(stopReasonOf(event)))
  })

  /** What each session's editor was last told of its modes and options (JSON). */
  const told = new Map<string, string>()
  /**
   * Tells the editor the session's mode and options as its host now reports them, when they
   * changed: a session made before its first prompt had none to tell (its host reports them once
   * the agent's session exists), and a headless client such as acpx checks its last known
   * options before `set model`. ACP's current_mode_update and config_option_update.
   */
  const tellSettings = async (sessionId: string) => {
    const root = roots.get(sessionId)
    if (root === undefined) return
    try {
      const state = (await node.request('sessions')).find(
        (s) => s.agent === agent.pubkey && s.thread === root,
      )
      const { modes, configOptions } = acpSettingsOf(state)
      const now = JSON.stringify({ modes, configOptions })
      if (state === undefined || told.get(sessionId) === now) return
      told.set(sessionId, now)
      if (modes !== undefined)
        await update(sessionId, {
          sessionUpdate: 'current_mode_update',
          currentModeId: modes.currentModeId,
        })
      if (configOptions !== undefined)
        await update(sessionId, { sessionUpdate: 'config_option_update', configOptions })
    } catch (err) {
      opts.log(`the session's settings were not told to the editor: ${String(err)}`)
    }
  }

  /** A card of one of this editor's turns: the editor's person answers it, signed here. */
  const askEditor = async (event: NostrEvent) => {
    let card: ReturnType<typeof parsePermissionRequest>
    try {
      card = parsePermissionRequest(event)
    } catch (err) {
      opts.log(`a permission request that does not parse: ${String(err)}`)
      return
    }
    const turn = turns.get(card.prompt)
    if (turn === undefined || turn.cards.has(card.id) || peer.client === undefined) return
    turn.cards.add(card.id)
    const answer = await peer.client.request<Acp.RequestPermissionResponse>(
      acp.methods.client.session.requestPermission,
      {
        ...permissionParams(card, turn.sessionId),
      },
    )
    // A dismissed dialog answers nothing: the card stays open for the person's other devices.
    if (answer.outcome.outcome !== 'selected') return
    try {
      await node.request('decide', { request: card.id, option: answer.outcome.optionId })
    } catch (err) {
      opts.log(`the decision on ${card.id.slice(0, 8)} was not sent: ${String(err)}`)
    }
  }

  /**
   * A session id an editor names: one made here (kept in the book from session/new on, with no
   * thread until its first prompt), or a thread's id or prefix, or a session's short id.
   * Undefined when unknown.
   */
  const lookup = async (sessionId: string): Promise<{ root?: string } | undefined> => {
    const place = (root: string | undefined) => (root === undefined || root === '' ? {} : { root })
    if (roots.has(sessionId)) return place(roots.get(sessionId))
    const kept = book.get(sessionId)
    if (kept !== undefined) return place(kept)
    const sessions = await node.request('sessions')
    const found = sessions.filter(
      (s) =>
        s.agent === agent.pubkey &&
        s.thread !== undefined &&
        (s.thread === sessionId || s.id === sessionId || s.thread.startsWith(sessionId)),
    )
    return found.length === 1 ? place(found[0]!.thread) : undefined
  }
  const rootOf = async (sessionId: string) => (await lookup(sessionId))?.root

  /** Makes a session id this connection's (session/load, or a prompt naming it), or throws. */
  const adopt = async (sessionId: string): Promise<string | undefined> => {
    if (roots.has(sessionId)) return roots.get(sessionId)
    const known = await lookup(sessionId)
    if (known === undefined) throw acp.RequestError.resourceNotFound(sessionId)
    roots.set(sessionId, known.root)
    return known.root
  }

  /** Choices made before a session's first prompt: they ride in its start (a project's). */
  const pending = new Map<string, Choice>()

  /** The host's newest report of this session's thread, or else of any session of the agent. */
  const stateOf = async (root: string | undefined): Promise<SessionState | undefined> => {
    const mine = (await node.request('sessions'))
      .filter((s) => s.agent === agent.pubkey)
      .sort((a, b) => b.reportedAt - a.reportedAt)
    return (root === undefined ? undefined : mine.find((s) => s.thread === root)) ?? mine[0]
  }

  /** A mode or option change: kept for the start before the first prompt, else a 4150 set. */
  const choose = async (sessionId: string, choice: Choice) => {
    const root = await adopt(sessionId)
    if (root !== undefined) {
      await sessionSet(sessionId, setRequestOf(choice))
      return stateOf(root)
    }
    // A start carries a mode and a model, and only in a project (kith-agents, "Sessions").
    if (opts.project === undefined || choice.options !== undefined)
      throw acp.RequestError.invalidParams(
        undefined,
        opts.project === undefined
          ? 'this session has no thread yet: send its first prompt, then change it (or start kith acp with --project to choose the mode and model of its start)'
          : 'only the mode and model can be chosen before the first prompt; change this option after it',
      )
    const was = pending.get(sessionId) ?? {}
    pending.set(sessionId, { ...was, ...choice })
    return stateOf(undefined)
  }

  const sessionSet = async (sessionId: string, request: SessionAction) => {
    const root = await rootOf(sessionId)
    if (root === undefined)
      throw acp.RequestError.invalidParams(
        undefined,
        'this session has no thread yet: send its first prompt, then change it',
      )
    const { id } = await node.request('session-request', {
      session: root,
      request,
    })
    // The host answers with a notice in the thread; it may be on another machine.
    for (let waited = 0; waited < 30_000; waited += 200) {
      const answer = await node.request('session-answer', { request: id })
      if (answer !== null) {
        if (outcomeOf(answer) === undefined) return
        throw acp.RequestError.invalidRequest(undefined, answer.content)
      }
      await new Promise((r) => setTimeout(r, 200))
    }
    throw acp.RequestError.internalError(undefined, 'the hosting node did not answer within 30 s')
  }

  return acp
    .agent({ name: 'kith' })
    .onRequest(acp.methods.agent.initialize, () => ({
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: { loadSession: true, promptCapabilities: { embeddedContext: true } },
      agentInfo: { name: `kith: ${agent.name}`, version: '1' },
    }))
    .onRequest(acp.methods.agent.session.new, async () => {
      const sessionId = `kith-${randomBytes(8).toString('hex')}`
      roots.set(sessionId, undefined)
      // Known from now on, so another connection (an editor restarted) can load it.
      book.set(sessionId, '')
      return { sessionId, ...acpSettingsOf(await stateOf(undefined)) }
    })
    .onRequest(acp.methods.agent.session.load, async ({ params }) => {
      const root = await adopt(params.sessionId)
      if (root === undefined) return acpSettingsOf(await stateOf(undefined))
      const history = await node.request('history', { channel, limit: 5000 })
      for (const { event } of history) {
        if (event.kind !== Kind.ChatMessage) continue
        if (event.id !== root && threadOf(event).root !== root) continue
        const mine = event.pubkey !== agent.pubkey
        await update(params.sessionId, {
          sessionUpdate: mine ? 'user_message_chunk' : 'agent_message_chunk',
          content: { type: 'text', text: event.content },
        })
      }
      return acpSettingsOf(await stateOf(root))
    })
    .onRequest(acp.methods.agent.session.setMode, async ({ params }) => {
      await choose(params.sessionId, { mode: params.modeId })
      return {}
    })
    .onRequest(acp.methods.agent.session.setConfigOption, async ({ params }) => {
      // A session state carries select options only (their values are strings).
      if (typeof params.value !== 'string')
        throw acp.RequestError.invalidParams(
          undefined,
          `${params.configId}: only select options can be set`,
        )
      const choice = choiceOf(params.configId, params.value)
      const state = await choose(params.sessionId, choice)
      return { configOptions: acpSettingsOf(state, choice).configOptions ?? [] }
    })
    .onNotification(acp.methods.agent.session.cancel, async ({ params }) => {
      const turn = [...turns.values()].find((t) => t.sessionId === params.sessionId)
      if (turn === undefined) return
      try {
        await node.request('cancel', { channel, agent: agent.name, prompt: turn.prompt })
      } catch (err) {
        opts.log(`cancel not sent: ${String(err)}`)
      }
    })
    .onRequest(acp.methods.agent.session.prompt, async ({ params }) => {
      await adopt(params.sessionId)
      if ([...turns.values()].some((t) => t.sessionId === params.sessionId))
        throw acp.RequestError.invalidRequest(undefined, 'a turn of this session is under way')
      // Nothing the agent would not see is dropped in silence (kith-agents, "ACP at the edge").
      const uncarried = uncarriedContent(params.prompt)
      if (uncarried.length > 0) {
        const data = uncarriedRefusal(uncarried)
        throw acp.RequestError.invalidParams(data, data.message)
      }
      const text = promptText(params.prompt).trim()
      if (text === '') throw acp.RequestError.invalidParams(undefined, 'an empty prompt')
      const root = roots.get(params.sessionId)
      const chosen = pending.get(params.sessionId) ?? {}
      const sent = await node.request('send', {
        channel,
        text: `@${agent.name} ${text}`,
        ...(root !== undefined
          ? { reply: root }
          : opts.project === undefined
            ? {}
            : {
                session: {
                  project: opts.project,
                  ...(opts.worktree === true ? { worktree: true } : {}),
                  ...(chosen.mode === undefined ? {} : { mode: chosen.mode }),
                  ...(chosen.model === undefined ? {} : { model: chosen.model }),
                },
              }),
      })
      if (root === undefined) {
        pending.delete(params.sessionId)
        roots.set(params.sessionId, sent.event.id)
        book.set(params.sessionId, sent.event.id)
      }
      return new Promise<Acp.PromptResponse>((resolve) => {
        turns.set(sent.event.id, {
          prompt: sent.event.id,
          sessionId: params.sessionId,
          streamed: '',
          cards: new Set(),
          finish: (stopReason) => resolve({ stopReason }),
        })
      })
    })
    .onConnect(async (connection) => {
      peer.client = connection.client
      void connection.closed.then(() => opts.onClose?.())
      await node.request('subscribe', { channel })
      await node.request('watch', { agent: agent.name })
    })
}

/** The session/update kinds of ACP (v1) an editor is given. */
const acpUpdates: ReadonlySet<string> = new Set([
  'user_message_chunk',
  'agent_message_chunk',
  'agent_thought_chunk',
  'tool_call',
  'tool_call_update',
  'plan',
  'available_commands_update',
  'current_mode_update',
  'config_option_update',
  'session_info_update',
  'usage_update',
])

/** The text of an agent_message_chunk update, if it is one. */
function agentText(u: unknown): string | undefined {
  if (typeof u !== 'object' || u === null) return undefined
  const { sessionUpdate, content } = u as { sessionUpdate?: unknown; content?: unknown }
  if (sessionUpdate !== 'agent_message_chunk') return undefined
  const c = content as { type?: unknown; text?: unknown } | undefined
  return c?.type === 'text' && typeof c.text === 'string' ? c.text : undefined
}
