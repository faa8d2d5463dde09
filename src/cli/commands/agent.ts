import { resolve } from 'node:path'
import { KithError } from '../../errors.js'
import { authConditions, makeAuthTag } from '../../grants/nip-oa.js'
import {
  checkAgentName,
  createAgentKey,
  listAgentRecords,
  writeAgentRecord,
} from '../../identity/agents.js'
import { syncHubs } from '../../node/fleet.js'
import { parseCommandArgs } from '../args.js'
import { parsePolicyFlag } from '../policy-flag.js'
import type { Out } from '../io.js'
import { npub } from '../key-text.js'
import { parseDuration } from '../duration.js'
import {
  describeKey,
  exitForReports,
  keyRows,
  nowSeconds,
  resolveTarget,
  revokeKey,
  withNode,
} from './fleet-common.js'
import { describeReports } from '../../node/fleet.js'

export const agentHelp = `Usage:
  kith agent add NAME [--kinds 9,4142] [--channels ops,dev] [--expires 30d] [--json]
                      [--cwd DIR] [--allow POLICY] [--approvers POLICY] [-- COMMAND ARGS…]
  kith agent list [--json]
  kith agent revoke NAME|NPUB [--json]

add     creates an agent key on this node (KITH_HOME/agents/NAME.key, 0600; the agent process
        never sees it) and a grant for it: from the owner when the owner key is here, otherwise
        from this device when its grant allows delegation. --kinds and --channels narrow what
        the agent may publish (default: as its issuer); --expires bounds the grant (e.g. 12h,
        30d). The grant is published to the configured hubs at once. With -- COMMAND (any
        ACP agent: claude-agent-acp, codex-acp, gemini --acp, …) kith up spawns it and anyone
        allowed can chat with it: @NAME in a channel. --cwd sets its working directory
        (default: the current one). --allow says who may prompt it, --approvers who may
        answer its tool-call permission requests and cancel its turns. POLICY is owner (the
        default: your own devices), fleet (every member) or npub1…,npub1… (you plus those
        people, with their devices, or single keys).
list    the agents hosted on this node, with their grant state.
revoke  revokes the agent's key on every hub, live connections included. Never undone: add a
        new agent to restore.`

function parseList(text: string | undefined, what: string): string[] | undefined {
  if (text === undefined) return undefined
  const items = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  if (items.length === 0) throw new KithError('usage', `--${what} needs at least one value`)
  return items
}

export async function runAgent(argv: string[], out: Out): Promise<number> {
  const { values, positionals } = parseCommandArgs(
    argv,
    {
      kinds: { type: 'string' },
      channels: { type: 'string' },
      expires: { type: 'string' },
      cwd: { type: 'string' },
      allow: { type: 'string' },
      approvers: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    agentHelp,
  )
  const dashdash = argv.indexOf('--')
  const command = dashdash >= 0 ? argv.slice(dashdash + 1) : undefined
  const [sub, name, ...extra] =
    command === undefined ? positionals : positionals.slice(0, positionals.length - command.length)
  if (values.help || sub === undefined) {
    out.line(agentHelp)
    return values.help ? 0 : 2
  }
  if (extra.length > 0) {
    throw new KithError(
      'usage',
      `unexpected argument ${extra[0]} (put the agent command after --)\n\n${agentHelp}`,
    )
  }
  if (command !== undefined && (sub !== 'add' || command.length === 0)) {
    throw new KithError('usage', `-- COMMAND goes with kith agent add NAME\n\n${agentHelp}`)
  }
  const allow = parsePolicyFlag(values.allow, '--allow')
  const approvers = parsePolicyFlag(values.approvers, '--approvers')
  return withNode(async (node) => {
    const now = nowSeconds()
    const { id, book } = node
    if (sub === 'add') {
      if (name === undefined)
        throw new KithError('usage', `kith agent add needs a NAME\n\n${agentHelp}`)
      checkAgentName(name)
      if (listAgentRecords(id.home).some((a) => a.name === name)) {
        throw new KithError('key-exists', `an agent named ${name} already exists on this node`)
      }
      const kinds = parseList(values.kinds, 'kinds')?.map((k) => {
        if (!/^\d{1,5}$/.test(k) || Number(k) > 65535)
          throw new KithError('usage', `--kinds: ${k} is not a kind`)
        return Number(k)
      })
      const channels = parseList(values.channels, 'channels')?.map((c) => c.replace(/^#/, ''))
      const exp = values.expires === undefined ? undefined : now + parseDuration(values.expires)
      // Prefer the owner as issuer; a device may grant agents only with deleg.
      let issuerSecret: Uint8Array
      let parent: string | undefined
      if (id.ownerSecret !== undefined && id.ownerPubkey !== undefined) {
        issuerSecret = id.ownerSecret
        parent =
          id.ownerPubkey === node.fleet ? undefined : book.currentGrant(id.ownerPubkey, now)?.id
      } else {
        const deviceGrant = book.currentGrant(id.devicePubkey, now)
        if (deviceGrant === undefined || !deviceGrant.deleg) {
          throw new KithError(
            'restricted',
            'this device cannot grant agents: the owner key is not here and its grant has no deleg. ' +
              'Run kith agent add on the owner machine, or re-pair this device with delegation.',
          )
        }
        issuerSecret = id.deviceSecret
        parent = deviceGrant.id
      }
      const key = createAgentKey(id.home, name)
      const grant = book.issueGrant(
        {
          subject: key.pubkey,
          role: 'agent',
          name,
          ...(parent === undefined ? {} : { parent }),
          ...(kinds === undefined ? {} : { kinds }),
          ...(channels === undefined ? {} : { channels }),
          ...(exp === undefined ? {} : { exp }),
        },
        issuerSecret,
        now,
      )
      const authTag = makeAuthTag(
        issuerSecret,
        key.pubkey,
        authConditions({ ...(kinds ? { kinds } : {}), ...(exp ? { exp } : {}) }),
      )
      key.secret.fill(0)
      writeAgentRecord(id.home, {
        name,
        pubkey: key.pubkey,
        grant: grant.id,
        authTag,
        createdAt: now,
        ...(command === undefined
          ? {}
          : {
              command,
              cwd: resolve(values.cwd ?? process.cwd()),
              allow: allow ?? 'owner',
              approvers: approvers ?? 'owner',
            }),
      })
      const reports = await syncHubs(node, now, (l) => out.err(l))
      if (values.json) {
        out.json({
          name,
          agent: npub(key.pubkey),
          grant: grant.id,
          issuer: npub(grant.pubkey),
          hubs: reports,
        })
      } else {
        out.line(`agent ${name} ${npub(key.pubkey)}`)
        out.line(
          `  granted by ${describeKey(node, grant.pubkey)}${exp ? `, until ${new Date(exp * 1000).toISOString()}` : ''}`,
        )
        if (kinds) out.line(`  kinds ${kinds.join(', ')}`)
        if (channels) out.line(`  channels ${channels.map((c) => `#${c}`).join(', ')}`)
        if (command)
          out.line(`  runs ${command.join(' ')} (kith up starts it; prompt it with @${name})`)
        for (const l of describeReports(reports)) out.line(l)
      }
      return exitForReports(reports)
    }
    if (sub === 'list') {
      if (name !== undefined) throw new KithError('usage', 'kith agent list takes no arguments')
      const rows = listAgentRecords(id.home).map((a) => {
        const d = book.authorize(a.pubkey, now)
        return {
          name: a.name,
          npub: npub(a.pubkey),
          status: d.ok ? 'active' : d.code,
          grant: a.grant,
        }
      })
      if (values.json) {
        out.json({ agents: rows })
        return 0
      }
      if (rows.length === 0) out.line('no agents on this node: kith agent add NAME')
      for (const r of rows) out.line(`${r.name.padEnd(16)} ${r.npub}  ${r.status}`)
      return 0
    }
    if (sub === 'revoke') {
      if (name === undefined)
        throw new KithError('usage', `kith agent revoke needs a NAME or NPUB\n\n${agentHelp}`)
      const local = listAgentRecords(id.home).find((a) => a.name === name)
      const row = local ? local.pubkey : resolveTarget(name, keyRows(node, 'agent', now), 'agent')
      const pubkey = typeof row === 'string' ? row : row.pubkey
      return revokeKey(node, pubkey, describeKey(node, pubkey), out, values.json ?? false)
    }
    throw new KithError('usage', `unknown agent command ${JSON.stringify(sub)}\n\n${agentHelp}`)
  })
}
