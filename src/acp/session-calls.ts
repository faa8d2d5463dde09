import { KithError } from '../errors.js'
import type { SessionSettings } from '../store/saved-session.js'
import { acpErrorCode, type AgentProcess, type SessionReport } from './agent-process.js'

export type { SessionSettings } from '../store/saved-session.js'

type ModeState = NonNullable<SessionReport['modes']>

/** Modes that would let tool calls run without asking, or that change what the agent does. */
const notAsking = /bypass|yolo|full|dont.?ask|accept|auto|plan/i

/**
 * The advertised mode in which the agent asks before running tools: `default` (claude-agent-acp,
 * gemini), `ask`, `read-only` (codex-acp), else the first one whose id and name suggest neither
 * a bypass nor plan-only. Undefined when none is safe.
 */
export function askingMode(modes: ModeState): string | undefined {
  const ids = modes.availableModes.map((m) => m.id)
  for (const preferred of ['default', 'ask', 'read-only']) {
    if (ids.includes(preferred)) return preferred
  }
  return modes.availableModes.find((m) => !notAsking.test(m.id) && !notAsking.test(m.name))?.id
}

/** The session's model as the agent reported it: a `model` config option, or unstable `models`. */
export function reportedModel(report: SessionReport): SessionSettings['model'] {
  const option = report.configOptions?.find((o) => o.category === 'model' && o.type === 'select')
  if (option !== undefined && typeof option.currentValue === 'string') {
    return { value: option.currentValue, configId: option.id }
  }
  const current = report.models?.currentModelId
  return typeof current === 'string' ? { value: current } : undefined
}

/**
 * One optional ACP call, its reply checked: false when the agent does not have the method
 * (-32601, remembered so it is not called again), true when it answered; any other error
 * throws.
 */
async function optionalCall(
  proc: AgentProcess,
  method: string,
  params: Record<string, unknown>,
  log: (line: string) => void,
): Promise<boolean> {
  if (proc.absent.has(method)) return false
  try {
    await proc.request<unknown>(method, params)
    return true
  } catch (err) {
    if (acpErrorCode(err) !== -32601) throw err
    proc.absent.add(method)
    log(`the agent has no ${method} (-32601); going on without it`)
    return false
  }
}

/** session/set_mode; false where the agent has no such method. */
export async function setMode(
  proc: AgentProcess,
  sessionId: string,
  modeId: string,
  log: (line: string) => void,
): Promise<boolean> {
  try {
    return await optionalCall(proc, 'session/set_mode', { sessionId, modeId }, log)
  } catch (err) {
    throw new KithError('error', `could not set the session's mode to ${modeId}`, { cause: err })
  }
}

/** The model: a config option where it is one (`configId`), else session/set_model. */
export async function setModel(
  proc: AgentProcess,
  sessionId: string,
  model: NonNullable<SessionSettings['model']>,
  log: (line: string) => void,
): Promise<void> {
  try {
    if (model.configId !== undefined) {
      await optionalCall(
        proc,
        'session/set_config_option',
        { sessionId, configId: model.configId, value: model.value },
        log,
      )
    } else {
      await optionalCall(proc, 'session/set_model', { sessionId, modelId: model.value }, log)
    }
  } catch (err) {
    throw new KithError('error', `could not set the session's model to ${model.value}`, {
      cause: err,
    })
  }
}

/** Any session config option (ACP session/set_config_option); throws where the agent has none. */
export async function setOption(
  proc: AgentProcess,
  sessionId: string,
  configId: string,
  value: string,
  log: (line: string) => void,
): Promise<void> {
  let answered: boolean
  try {
    answered = await optionalCall(
      proc,
      'session/set_config_option',
      { sessionId, configId, value },
      log,
    )
  } catch (err) {
    throw new KithError('error', `could not set the session's ${configId} to ${value}`, {
      cause: err,
    })
  }
  if (!answered)
    throw new KithError(
      'invalid',
      'the agent has no session config options (session/set_config_option)',
    )
}

/**
 * Pins a new session's permission mode: where the agent advertises modes, the asking one is
 * set explicitly (an agent may start in a bypass mode inherited from ambient settings). Returns
 * what to persist with the session. Throws when no advertised mode asks.
 */
export async function pinNewSession(
  proc: AgentProcess,
  sessionId: string,
  report: SessionReport,
  log: (line: string) => void,
): Promise<SessionSettings> {
  const model = reportedModel(report)
  const settings: SessionSettings = model === undefined ? {} : { model }
  if (report.modes === undefined || report.modes === null) return settings
  const mode = askingMode(report.modes)
  if (mode === undefined) {
    throw new KithError(
      'error',
      `none of the agent's modes (${report.modes.availableModes.map((m) => m.id).join(', ')}) asks before running tools; not starting a session in ${report.modes.currentModeId}`,
    )
  }
  if (!(await setMode(proc, sessionId, mode, log))) return settings
  log(`pinned session ${sessionId} to mode ${mode}`)
  return { ...settings, mode }
}

/** After session/load: the saved mode and model again (some adapters forget them on load). */
export async function reapplySettings(
  proc: AgentProcess,
  sessionId: string,
  saved: SessionSettings,
  log: (line: string) => void,
): Promise<void> {
  if (saved.mode !== undefined) await setMode(proc, sessionId, saved.mode, log)
  if (saved.model !== undefined) await setModel(proc, sessionId, saved.model, log)
}

/**
 * Sends `text` into the turn running in `sessionId` (the `_session/steering` extension, only
 * where the adapter advertises it). `idleBehavior: promptRequired` makes a steer that arrives
 * after the turn ended fail instead of starting a turn nobody tracks. Returns false when the
 * steer was not taken (the caller queues the message instead).
 */
export async function steer(
  proc: AgentProcess,
  sessionId: string,
  text: string,
  log: (line: string) => void,
): Promise<boolean> {
  if (!proc.canSteer) return false
  try {
    return await optionalCall(
      proc,
      '_session/steering',
      {
        sessionId,
        prompt: [{ type: 'text', text }],
        _meta: { steering: { idleBehavior: 'promptRequired' } },
      },
      log,
    )
  } catch (err) {
    // Not taken (the turn just ended, or the adapter refused): the message is queued as usual.
    log(`steering refused (${err instanceof Error ? err.message : String(err)}); queued instead`)
    return false
  }
}
