import { readFileSync } from 'node:fs'
import { generateSecretKey } from 'nostr-tools/pure'
import { describe, expect, it } from 'vitest'
import { isKithError } from '../../src/errors.js'
import {
  makeAgentCancel,
  openPromptsIn,
  parseAgentControl,
  type AgentCancelSpec,
} from '../../src/events/agent-control.js'
import { checkFresh, requireFleet } from '../../src/events/agent-binding.js'
import { makeChatMessage } from '../../src/events/chat.js'
import { publicKeyOf, signEvent, type NostrEvent } from '../../src/events/event.js'
import {
  makePermissionDecision,
  parsePermissionDecision,
  type PermissionDecisionSpec,
} from '../../src/events/permission-decision.js'
import {
  makePermissionRequest,
  parsePermissionRequest,
  permissionInputHash,
  type PermissionRequestSpec,
} from '../../src/events/permission-request.js'

interface Vectors {
  nodeMade: { request: NostrEvent; decision: NostrEvent; cancel: NostrEvent; prompt: string }
  make: Record<
    string,
    {
      spec: unknown
      createdAt: number
      expect: { kind: number; tags: string[][]; content: string }
    }
  >
  invalid: { what: 'request' | 'decision' | 'cancel'; reason: string; event: NostrEvent }[]
}

const vectors = JSON.parse(
  readFileSync(new URL('../vectors/agent-events.json', import.meta.url), 'utf8'),
) as Vectors

const parsers = {
  request: parsePermissionRequest,
  decision: parsePermissionDecision,
  cancel: parseAgentControl,
}

/** The refusal's reason, asserting it is KithError('invalid'). */
function refusal(fn: () => unknown): string | undefined {
  try {
    fn()
  } catch (err) {
    if (isKithError(err, 'invalid')) return err.reason
    throw err
  }
  return undefined
}

describe('agent events made by a real node, read and made again (test/vectors/agent-events.json)', () => {
  const { request, decision, cancel, prompt } = vectors.nodeMade

  it('a kind-4142 request: the same tags and content, byte for byte', () => {
    const r = parsePermissionRequest(request)
    expect(r).toMatchObject({
      agent: request.pubkey,
      channel: 'ops',
      prompt,
      title: 'rm -rf build',
      toolKind: 'execute',
    })
    const again = makePermissionRequest(
      { ...r, fleet: r.fleet!, prompter: r.prompter },
      request.created_at,
    )
    expect(again).toEqual({
      kind: request.kind,
      created_at: request.created_at,
      tags: request.tags,
      content: request.content,
    })
  })

  it('a kind-4143 decision (kith permit) and a kind-4144 cancel (kith cancel)', () => {
    const d = parsePermissionDecision(decision)
    expect(d).toMatchObject({ request: request.id, agent: request.pubkey, optionId: 'allow' })
    const r = parsePermissionRequest(request)
    expect(
      makePermissionDecision(
        {
          request: { id: r.id, channel: r.channel, agent: r.agent },
          fleet: r.fleet!,
          optionId: 'allow',
        },
        decision.created_at,
      ),
    ).toEqual({
      kind: decision.kind,
      created_at: decision.created_at,
      tags: decision.tags,
      content: decision.content,
    })
    const c = parseAgentControl(cancel)
    expect(c).toMatchObject({ action: 'cancel', channel: 'ops', agents: [request.pubkey] })
    expect(
      makeAgentCancel(
        { channel: c.channel, fleet: c.fleet!, agent: c.agents[0]!, prompts: c.prompts },
        cancel.created_at,
      ),
    ).toEqual({
      kind: cancel.kind,
      created_at: cancel.created_at,
      tags: cancel.tags,
      content: cancel.content,
    })
  })
})

describe('make', () => {
  it.each(Object.entries(vectors.make))('%s', (name, v) => {
    const template = name.startsWith('cancel')
      ? makeAgentCancel(v.spec as AgentCancelSpec, v.createdAt)
      : name === 'decision'
        ? makePermissionDecision(v.spec as PermissionDecisionSpec, v.createdAt)
        : makePermissionRequest(v.spec as PermissionRequestSpec, v.createdAt)
    expect(template).toEqual({ ...v.expect, created_at: v.createdAt })
    // What is made parses back to what was asked for.
    const event = signEvent(template, generateSecretKey())
    const parsed =
      parsers[name.startsWith('cancel') ? 'cancel' : name === 'decision' ? 'decision' : 'request'](
        event,
      )
    expect(parsed).toMatchObject({ id: event.id, createdAt: v.createdAt })
  })

  it('a cancel that names no open prompt is never made, nor one naming more than 50', () => {
    const f = 'f'.repeat(64)
    expect(refusal(() => makeAgentCancel({ channel: 'ops', fleet: f, prompts: [] }, 1))).toBe(
      'no-prompts',
    )
    const many = Array.from({ length: 51 }, (_, i) => i.toString(16).padStart(64, '0'))
    expect(refusal(() => makeAgentCancel({ channel: 'ops', fleet: f, prompts: many }, 1))).toBe(
      'too-many-prompts',
    )
  })

  it('the input hash is SHA-256 of [toolKind, title, rawInput or null]', () => {
    expect(permissionInputHash({ toolKind: 'execute', title: 'rm -rf build' })).toBe(
      parsePermissionRequest(vectors.nodeMade.request).input,
    )
  })
})

describe('parse refuses malformed events with a stable reason', () => {
  it.each(vectors.invalid.map((v) => [v.what, v.reason, v] as const))(
    '%s: %s',
    (what, reason, v) => {
      expect(refusal(() => parsers[what](v.event))).toBe(reason)
    },
  )
})

describe('a decision forged by a member is still read as what it is', () => {
  it('a decision for another fleet, or too old, parses but does not bind', () => {
    const sk = generateSecretKey()
    const r = parsePermissionRequest(vectors.nodeMade.request)
    const other = 'e'.repeat(64)
    const forged = signEvent(
      makePermissionDecision(
        {
          request: { id: r.id, channel: r.channel, agent: r.agent },
          fleet: other,
          optionId: 'allow',
        },
        r.createdAt - 3600,
      ),
      sk,
    )
    const d = parsePermissionDecision(forged)
    expect(d.author).toBe(publicKeyOf(sk))
    expect(requireFleet(forged, r.fleet!)).toEqual({
      ok: false,
      reason: 'its fleet tag names another fleet',
    })
    expect(checkFresh(forged, r.createdAt).ok).toBe(false)
  })
})

describe('open prompts (what a cancel or an interrupt names)', () => {
  const agent = generateSecretKey()
  const other = generateSecretKey()
  const me = generateSecretKey()
  const a = publicKeyOf(agent)
  const o = publicKeyOf(other)
  const isAgent = (k: string) => k === a || k === o
  let t = 1_796_000_000
  const say = (
    sk: Uint8Array,
    text: string,
    extra: { mentions?: string[]; reply?: NostrEvent; notice?: boolean } = {},
  ) => {
    const tpl = makeChatMessage(
      {
        channel: 'ops',
        text,
        ...(extra.mentions ? { mentions: extra.mentions } : {}),
        ...(extra.reply ? { replyTo: { id: extra.reply.id } } : {}),
      },
      t++,
    )
    if (extra.notice) tpl.tags.push(['notice'])
    return signEvent(tpl, sk)
  }

  it('a prompt stays open until its agent answers it; a notice does not answer', () => {
    const q1 = say(me, '@a one', { mentions: [a] })
    const q2 = say(me, '@a two', { mentions: [a] })
    const q3 = say(me, '@o three', { mentions: [o] })
    const n = say(agent, 'queued', { reply: q2, notice: true })
    const r1 = say(agent, 'answer', { reply: q1 })
    const newestFirst = [q1, q2, q3, n, r1].reverse()
    expect(openPromptsIn(newestFirst, isAgent)).toEqual([q3.id, q2.id])
    expect(openPromptsIn(newestFirst, isAgent, new Set([a]))).toEqual([q2.id])
    // Another agent's answer does not close a prompt to this one.
    const fake = say(other, 'answer for a', { reply: q2 })
    expect(openPromptsIn([fake, ...newestFirst], isAgent, new Set([a]))).toEqual([q2.id])
  })
})
