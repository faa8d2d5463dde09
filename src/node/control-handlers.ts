import { resolveAgent } from '../grants/names.js'
import type { ControlParams, ControlResult } from './control-methods.js'
import type { ControlHandlers } from './control.js'
import type { KithNode } from './kith-node.js'
import { maxPresenceAgents } from './presence.js'
import { listSessions } from './sessions.js'

/**
 * The node's answer to each control method (control-methods.ts), over its parts. The server
 * (control.ts, `checkedHandlers`) has read each request's params into its type before these run.
 */
export function controlHandlers(node: KithNode): ControlHandlers {
  const { bridge } = node
  return {
    status: () => node.status(),
    send: (p) => node.sendChat(p),
    subscribe: (p, client) => {
      const off = node.onChat((item) => {
        if (p.channel === undefined || item.channel === p.channel) client.notify('chat', item)
      })
      client.onClose(off)
      return { ok: true }
    },
    history: (p) => node.history(p),
    channels: () => node.store.channels(),
    decide: (p) => node.decide(p),
    cards: (p) => bridge.permissions.openCards(p),
    'cards-sealed': (p) => ({ count: bridge.permissions.sealedCards(p) }),
    cancel: (p) => node.cancelTurn(p),
    hosts: (p) => agentHosts(node, p),
    metrics: () => ({ turns: node.turnMetrics }),
    watch: (p, client) => bridge.frames.watch(p, client),
    agent: (p) => agentInfo(node, p),
    // kith session (sessions.ts, session-control.ts).
    sessions: () => listSessions(node.store.reads),
    'session-request': (p) => bridge.requestSession(p),
    'session-answer': (p) => bridge.sessionAnswer(p),
    'agents-changed': () => {
      node.agentsChanged()
      return { ok: true }
    },
    'grants-changed': () => {
      node.grantsChanged()
      return { ok: true }
    },
  }
}

/**
 * For each agent asked about: whether it is still a member, and the device that last reported
 * hosting it with that device's presence now (kith-chat/1: offline once it said so, or after
 * 2.5 of its intervals without a word). A turn whose host is offline cannot finish there.
 */
export function agentHosts(node: KithNode, params: ControlParams<'hosts'>): ControlResult<'hosts'> {
  const nowMs = Date.now()
  const now = Math.floor(nowMs / 1000)
  return params.agents
    .filter((a) => /^[0-9a-f]{64}$/.test(a))
    .slice(0, maxPresenceAgents)
    .map((agent) => {
      const member = node.book.verifier.isMember(agent, now).ok
      if (node.agents.has(agent))
        return { agent, member, host: node.id.config.name, status: 'online' as const }
      const last = node.presence.book.lastHost(agent, nowMs)
      return {
        agent,
        member,
        host: last === undefined ? null : node.names.who(last.device).name,
        status: last?.status ?? 'unknown',
      }
    })
}

/** kith acp: the agent a name means here, and the machine that reports hosting it (presence). */
export function agentInfo(node: KithNode, params: ControlParams<'agent'>): ControlResult<'agent'> {
  const pubkey = resolveAgent(node.names, params.name, node.id.devicePubkey)
  const report = node.presence.book.hostOf(pubkey, Date.now())
  return {
    pubkey,
    name: node.names.who(pubkey).name,
    host: report === undefined ? null : node.names.who(report.device).name,
  }
}
