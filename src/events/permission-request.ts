import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js'
import type { EventTemplate, NostrEvent } from './event.js'
import { Kind } from './kinds.js'
import { previewFits, previewMaxBytes } from './permission-preview.js'
import { parseQuorum, type Quorum } from './agent-policy.js'
import {
  hexKey,
  invalid,
  jsonObject,
  oneChannel,
  optionalFleet,
  requireKind,
  stringField,
  tagValues,
} from './agent-event-parts.js'

/** One answer an agent offers for a tool call (ACP `PermissionOption`), as the agent gave it. */
export interface PermissionOption {
  optionId: string
  name: string
  /** ACP kind: allow_once, allow_always, reject_once, reject_always. */
  kind: string
}

/** The content of a kind-4142 request (kith-agents/1, "Permission request"), in wire order. */
export interface PermissionRequestContent {
  title: string
  toolKind: string
  options: PermissionOption[]
  /** Unix seconds; unanswered then, the agent is answered `cancelled`. */
  expires: number
  toolCallId: string
  sessionId: string
  /** Hex SHA-256 of the call's input (`permissionInputHash`). */
  input: string
  /** 16 random hex characters: no two requests share an id. */
  nonce: string
  /** Why the host asks whatever its policy: the call touches a secret. */
  sensitive?: string
  /** What the call will do (permission-preview.ts): a diff, a command and its cwd, a path. */
  preview?: string
  /** Present when the preview was truncated: the whole preview's size in UTF-8 bytes. */
  previewBytes?: number
  /** The id of the agent policy (kind 34151) the card is judged under. */
  policy?: string
  /** Present when this card needs N people (kith-agents "Quorum"): n and the policy's kinds. */
  quorum?: Quorum
}

export interface PermissionRequestSpec extends PermissionRequestContent {
  channel: string
  /** The founder's key: the fleet the request is made in. */
  fleet: string
  /** The prompt whose turn asks (the thread root). */
  prompt: string
  /** Who sent that prompt. */
  prompter: string
}

/** A parsed kind-4142 event. */
export interface PermissionRequest extends PermissionRequestContent {
  id: string
  /** The agent that asks (the event's author). */
  agent: string
  createdAt: number
  channel: string
  /** undefined: made by a client that names no fleet. */
  fleet: string | undefined
  prompt: string
  prompter: string
}

/**
 * What a request carries of the call: hex SHA-256 of the UTF-8 JSON array
 * `[toolKind, title, rawInput or null]`, as the host received them.
 */
export function permissionInputHash(call: {
  toolKind: string
  title: string
  rawInput?: unknown
}): string {
  return bytesToHex(
    sha256(utf8ToBytes(JSON.stringify([call.toolKind, call.title, call.rawInput ?? null]))),
  )
}

/** The unsigned request (signed by the agent's key); tag and content order are fixed. */
export function makePermissionRequest(
  spec: PermissionRequestSpec,
  createdAt: number,
): EventTemplate {
  const content: PermissionRequestContent = {
    title: spec.title,
    toolKind: spec.toolKind,
    options: spec.options,
    expires: spec.expires,
    toolCallId: spec.toolCallId,
    sessionId: spec.sessionId,
    input: spec.input,
    nonce: spec.nonce,
    ...(spec.sensitive === undefined ? {} : { sensitive: spec.sensitive }),
    ...(spec.preview === undefined ? {} : { preview: spec.preview }),
    ...(spec.previewBytes === undefined ? {} : { previewBytes: spec.previewBytes }),
    ...(spec.policy === undefined ? {} : { policy: spec.policy }),
    ...(spec.quorum === undefined ? {} : { quorum: spec.quorum }),
  }
  return {
    kind: Kind.PermissionRequest,
    created_at: createdAt,
    tags: [
      ['h', spec.channel],
      ['fleet', spec.fleet],
      ['e', spec.prompt, '', 'root'],
      ['p', spec.prompter],
    ],
    content: JSON.stringify(content),
  }
}

function parseOption(value: unknown): PermissionOption {
  const o = value as Record<string, unknown> | null
  if (
    typeof o !== 'object' ||
    o === null ||
    typeof o.optionId !== 'string' ||
    typeof o.name !== 'string' ||
    typeof o.kind !== 'string'
  )
    throw invalid('bad-content', 'permission request: each option has optionId, name and kind')
  return { optionId: o.optionId, name: o.name, kind: o.kind }
}

/**
 * Reads a kind-4142 event: one `h`, at most one `fleet`, the prompt as the `e` root, one `p`
 * (the prompter), and the content fields of kith-agents/1. Throws KithError('invalid') with the
 * reason `wrong-kind`, `bad-tags` or `bad-content`. Checks neither signature nor authority.
 */
export function parsePermissionRequest(event: NostrEvent): PermissionRequest {
  const what = 'permission request'
  requireKind(event, Kind.PermissionRequest, 'a permission request')
  const channel = oneChannel(event)
  const fleet = optionalFleet(event)
  const roots = event.tags.filter((t) => t[0] === 'e' && t[3] === 'root')
  if (roots.length !== 1 || roots[0]![1] === undefined)
    throw invalid('bad-tags', `${what}: expected one e tag marked root (the prompt)`)
  const prompt = hexKey(roots[0]![1], 'the prompt id')
  const prompters = tagValues(event, 'p')
  if (prompters.length !== 1)
    throw invalid('bad-tags', `${what}: expected one p tag (the prompter)`)
  const prompter = hexKey(prompters[0]!, 'the prompter')
  const c = jsonObject(event.content, what)
  if (!Array.isArray(c.options) || c.options.length === 0)
    throw invalid('bad-content', `${what}: options must be a non-empty array`)
  const options = (c.options as unknown[]).map(parseOption)
  if (typeof c.expires !== 'number' || !Number.isInteger(c.expires) || c.expires < 0)
    throw invalid('bad-content', `${what}: expires must be unix seconds`)
  const input = stringField(c, 'input', what)
  if (!/^[0-9a-f]{64}$/.test(input))
    throw invalid('bad-content', `${what}: input must be a hex SHA-256`)
  if (c.sensitive !== undefined && typeof c.sensitive !== 'string')
    throw invalid('bad-content', `${what}: sensitive must be a string`)
  if (c.preview !== undefined && (typeof c.preview !== 'string' || !previewFits(c.preview)))
    throw invalid(
      'bad-content',
      `${what}: preview must be a string of at most ${previewMaxBytes} bytes`,
    )
  if (
    c.previewBytes !== undefined &&
    (typeof c.previewBytes !== 'number' || !Number.isInteger(c.previewBytes) || c.previewBytes < 0)
  )
    throw invalid('bad-content', `${what}: previewBytes must be a byte count`)
  if (c.policy !== undefined && (typeof c.policy !== 'string' || !/^[0-9a-f]{64}$/.test(c.policy)))
    throw invalid('bad-content', `${what}: policy must be an event id`)
  const quorum = parseQuorum(c.quorum, what)
  return {
    id: event.id,
    agent: event.pubkey,
    createdAt: event.created_at,
    channel,
    fleet,
    prompt,
    prompter,
    title: stringField(c, 'title', what),
    toolKind: stringField(c, 'toolKind', what),
    options,
    expires: c.expires,
    toolCallId: stringField(c, 'toolCallId', what),
    sessionId: stringField(c, 'sessionId', what),
    input,
    nonce: stringField(c, 'nonce', what),
    ...(typeof c.sensitive === 'string' ? { sensitive: c.sensitive } : {}),
    ...(typeof c.preview === 'string' ? { preview: c.preview } : {}),
    ...(typeof c.previewBytes === 'number' ? { previewBytes: c.previewBytes } : {}),
    ...(typeof c.policy === 'string' ? { policy: c.policy } : {}),
    ...(quorum === undefined ? {} : { quorum }),
  }
}
