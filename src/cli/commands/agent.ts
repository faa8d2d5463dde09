import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { KithError } from '../../errors.js'
import {
  parseToolKinds,
  quorumMax,
  type AcpToolKind,
  type Quorum,
} from '../../events/agent-policy.js'
import { chooseIssuer } from '../../grants/issuer.js'
import { authConditionSets, makeAuthTag } from '../../grants/nip-oa.js'
import {
  checkAgentName,
  createAgentKey,
  defaultMaxSessions,
  defaultMaxWorktrees,
  listAgentRecords,
  removeAgentFiles,
  writeAgentRecord,
  type AgentRecord,
} from '../../identity/agents.js'
import { syncHubs } from '../../node/fleet.js'
import { declare } from '../declare.js'
import { parsePolicyFlag } from '../policy-flag.js'
import type { Out } from '../io.js'
import { npub } from '../key-text.js'
import { parseDuration } from '../duration.js'
import {
  describeKey,
  exitForReports,
  keyRows,
  notifyDaemon,
  nowSeconds,
  resolveTarget,
  revokeKey,
  withNode,
} from './fleet-common.js'
import { describeReports } from '../../node/fleet.js'
import { parsePermissionsMode } from '../../acp/auto-allow.js'
import { listAgents, listFleetAgents } from './agent-list.js'
import { commandProblem } from '../../acp/command-check.js'
import { runAgentLogs } from './agent-logs.js'
import { describePolicy } from '../../grants/policy.js'

export const agentCommand = declare({
  name: 'agent',
  summary: 'add, list or revoke agent keys hosted on this node',
  usage: [
    'kith agent add NAME [--kinds 9,4142] [--channels ops,dev] [--expires 30d] [--json]\n                      [--cwd DIR] [--allow POLICY] [--approvers POLICY]\n                      [--permissions ask|allow-reads|allow-all] [--env NAME,…]\n                      [--quorum N --for KINDS] [--max-sessions N] [--max-worktrees N]\n                      [-- COMMAND ARGS…]',
    'kith agent set NAME [--allow POLICY] [--approvers POLICY] [--permissions MODE] [--env NAME,…]\n                      [--quorum N] [--for KINDS] [--max-sessions N] [--max-worktrees N]',
    'kith agent list [--fleet] [--all] [--json]',
    'kith agent logs NAME [--lines N] [--follow]',
    'kith agent revoke NAME|NPUB [--json] [--yes]',
    'kith agent rm NAME',
  ],
  subcommands: {
    add: 'create an agent key and grant, and the command kith up runs for it',
    set: "change an agent's settings",
    list: 'the agents hosted here (--fleet: every agent of the fleet)',
    logs: "the agent's log (its stderr)",
    revoke: "revoke the agent's key on every hub",
    rm: 'forget a revoked agent on this node',
  },
  options: {
    kinds: { type: 'string', value: '9,4142', description: '(add) the event kinds it may publish' },
    channels: {
      type: 'string',
      value: 'ops,dev',
      description: '(add) the channels it may post in',
    },
    expires: { type: 'string', value: '30d', description: '(add) the grant ends after this long' },
    cwd: { type: 'string', value: 'DIR', description: "(add, set) the agent's working directory" },
    allow: {
      type: 'string',
      value: 'POLICY',
      description: 'who may prompt it: owner, fleet or npub1…,…',
    },
    approvers: {
      type: 'string',
      value: 'POLICY',
      description: 'who may answer its permission requests and cancel its turns',
    },
    permissions: {
      type: 'string',
      value: 'MODE',
      description: 'ask, allow-reads or allow-all: which tool calls run without asking',
    },
    quorum: {
      type: 'string',
      value: 'N',
      description: 'cards of the --for tool kinds run only after N people allowed them (1: none)',
    },
    for: {
      type: 'string',
      value: 'KINDS',
      description: 'ACP tool kinds the quorum holds for: execute,edit,delete,…',
    },
    env: {
      type: 'string',
      value: 'NAME,…',
      description: "variables passed from kith up's environment",
    },
    'max-sessions': {
      type: 'string',
      value: 'N',
      description: `open sessions it keeps at most (default ${defaultMaxSessions})`,
    },
    'max-worktrees': {
      type: 'string',
      value: 'N',
      description: `git worktrees made for its sessions at most (default ${defaultMaxWorktrees})`,
    },
    json: { type: 'boolean', description: 'machine-readable output' },
    all: { type: 'boolean', description: '(list) agents no longer granted too' },
    fleet: { type: 'boolean', description: '(list) every agent of the fleet (needs kith up)' },
    yes: { type: 'boolean', description: '(revoke) do not ask for confirmation' },
  },
  about: `add     creates an agent key on this node (KITH_HOME/agents/NAME.key, 0600; the agent process
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
        --permissions: ask (default) sends every tool call to a person for approval;
        allow-reads lets read, search, think and fetch calls run without asking; allow-all lets
        every call run. The agent is kept in a mode that asks, so each call is seen either way.
        A call that names KITH_HOME or other secrets (~/.ssh, ~/.aws, .env, key files…) always
        asks, and its card says why; an allowed command still runs with your user's rights
        (see the README: What an agent can reach).
        --quorum N --for execute,edit: a card of those ACP tool kinds (read, edit, delete, move,
        search, execute, think, fetch, switch_mode, other) runs only after approvers who are N
        different people allowed it (two devices of one person count once); any approver's
        Reject ends it; such a call is never allowed without asking, whatever --permissions
        says. --quorum 1 removes it. The policy (who may prompt, approve, the mode and quorum)
        is published signed by this device whenever it changes (kind 34151).
        --env passes these variables through from kith up's environment (for example an API
        key: --env ANTHROPIC_API_KEY); otherwise the agent sees only PATH, HOME, LANG, TERM,
        USER and the like. KITH_* variables are never passed. The command is checked: one that
        is not on PATH (or not an executable file) is added with a warning, since kith up could
        not start it (a failed start is also in kith agent logs NAME).
        --max-sessions and --max-worktrees bound what others can make it start: a new session
        (every top-level mention is one) past its open sessions, or a worktree past those made
        for it, is refused in the channel, naming the cap (defaults ${defaultMaxSessions} and ${defaultMaxWorktrees}).
set     changes those settings of an agent hosted here; a running node applies them at once.
list    the agents hosted on this node: grant state, permissions, and under kith up the
        process state, adapter, queue and sessions. --fleet: every agent of the fleet, where it
        runs and its state (idle, working, awaiting-permission, crashed…) as its node reports
        it (needs kith up here). Agents no longer granted (revoked, expired) show with --all.
logs    the agent's log (its stderr): the last lines, or --follow (kith agent logs --help).
revoke  revokes the agent's key on every hub, live connections included. Never undone: add a
        new agent to restore. Asks first on a terminal; from a script it needs --yes. A turn it is running is stopped, and each prompt it had taken is
        told so in its channel.
rm      forgets a revoked (or expired) agent on this node: its key file, record and log. Its
        revocation stays. The name is then free for kith agent add (with a new key).`,
})

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
  if (argv[0] === 'logs') return runAgentLogs(argv.slice(1), out)
  const parsed = agentCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values, positionals } = parsed
  const dashdash = argv.indexOf('--')
  const command = dashdash >= 0 ? argv.slice(dashdash + 1) : undefined
  const [sub, name, ...extra] =
    command === undefined ? positionals : positionals.slice(0, positionals.length - command.length)
  if (extra.length > 0) {
    throw new KithError(
      'usage',
      `unexpected argument ${extra[0]} (put the agent command after --)\n\n${agentCommand.help()}`,
    )
  }
  if (command !== undefined && (sub !== 'add' || command.length === 0)) {
    throw new KithError(
      'usage',
      `-- COMMAND goes with kith agent add NAME\n\n${agentCommand.help()}`,
    )
  }
  const allow = parsePolicyFlag(values.allow, '--allow')
  const approvers = parsePolicyFlag(values.approvers, '--approvers')
  const permissions =
    values.permissions === undefined ? undefined : parsePermissionsMode(values.permissions)
  const env = parseEnvNames(values.env)
  const quorumN = parseQuorumFlag(values.quorum)
  const quorumFor = values.for === undefined ? undefined : forKinds(values.for)
  const maxSessions = parseCap(values['max-sessions'], '--max-sessions')
  const maxWorktrees = parseCap(values['max-worktrees'], '--max-worktrees')
  const caps = {
    ...(maxSessions === undefined ? {} : { maxSessions }),
    ...(maxWorktrees === undefined ? {} : { maxWorktrees }),
  }
  if (
    sub === 'add' &&
    (permissions !== undefined ||
      env !== undefined ||
      quorumN !== undefined ||
      quorumFor !== undefined ||
      Object.keys(caps).length > 0) &&
    command === undefined
  ) {
    throw new KithError(
      'usage',
      `--permissions, --env, --quorum and --max-* go with an agent command (-- COMMAND)`,
    )
  }
  return withNode(async (node) => {
    const now = nowSeconds()
    const { id, book } = node
    if (sub === 'add') {
      if (name === undefined)
        throw new KithError('usage', `kith agent add needs a NAME\n\n${agentCommand.help()}`)
      checkAgentName(name)
      const existing = listAgentRecords(id.home).find((a) => a.name === name)
      if (existing !== undefined) {
        const d = book.authorize(existing.pubkey, now)
        throw new KithError(
          'key-exists',
          d.ok
            ? `an agent named ${name} already exists on this node (kith agent set ${name} changes its settings)`
            : `an agent named ${name} existed here and is ${d.code}: kith agent rm ${name} forgets it, then add it again`,
        )
      }
      const cwd = resolve(values.cwd ?? process.cwd())
      const warnings: string[] = []
      if (command !== undefined) {
        if (!existsSync(cwd))
          throw new KithError('usage', `--cwd: ${cwd} does not exist (the agent would run there)`)
        const problem = commandProblem(command[0]!, cwd)
        if (problem !== undefined)
          warnings.push(
            `${problem}: kith up could not start it. Install it, or add the agent again with its full path (kith agent revoke ${name}; kith agent rm ${name})`,
          )
      }
      const kinds = parseList(values.kinds, 'kinds')?.map((k) => {
        if (!/^\d{1,5}$/.test(k) || Number(k) > 65535)
          throw new KithError('usage', `--kinds: ${k} is not a kind`)
        return Number(k)
      })
      const channels = parseList(values.channels, 'channels')?.map((c) => c.replace(/^#/, ''))
      const exp = values.expires === undefined ? undefined : now + parseDuration(values.expires)
      // Prefer the owner as issuer; a device may grant agents only with deleg.
      const { by, parent } = chooseIssuer(
        {
          ...(id.ownerSecret === undefined ? {} : { owner: id.ownerPubkey }),
          device: id.devicePubkey,
        },
        node.fleet,
        (k) => book.currentGrant(k, now),
      )
      const issuerSecret = by === 'owner' && id.ownerSecret ? id.ownerSecret : id.deviceSecret
      const key = createAgentKey(id.home, name)
      const grant = book.issueGrant(
        {
          subject: key.pubkey,
          subjectSecret: key.secret,
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
      // NIP-OA: one signed condition set per kind the grant allows, each bounded by the
      // effective window of the whole chain (a parent's expiry binds the agent too).
      const position = book.verifier.positionOf(grant.id)
      const authTags = authConditionSets({
        ...(position?.kinds === undefined ? {} : { kinds: [...position.kinds] }),
        ...(position?.nbf === undefined ? {} : { nbf: position.nbf }),
        ...(position?.exp === undefined ? {} : { exp: position.exp }),
      }).map((conditions) => makeAuthTag(issuerSecret, key.pubkey, conditions))
      key.secret.fill(0)
      writeAgentRecord(id.home, {
        name,
        pubkey: key.pubkey,
        grant: grant.id,
        authTags,
        createdAt: now,
        ...(command === undefined
          ? {}
          : {
              command,
              cwd,
              allow: allow ?? 'owner',
              approvers: approvers ?? 'owner',
              permissions: permissions ?? 'ask',
              ...(env === undefined ? {} : { env }),
              ...quorumSetting(undefined, quorumN, quorumFor),
              ...caps,
            }),
      })
      const reports = await syncHubs(node, now, (l) => out.err(l))
      // A running node hosts it at once (no restart needed).
      const live = command === undefined ? false : await notifyDaemon('agents-changed')
      for (const w of warnings) out.err(`⚠ ${w}`)
      if (values.json) {
        out.json({
          name,
          warnings,
          hosted: live,
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
        if (command) {
          out.line(
            `  runs ${command.join(' ')} (${live ? 'the running node hosts it now' : 'kith up starts it'}; prompt it with @${name})`,
          )
          out.line(`  permissions ${permissions ?? 'ask'}`)
        }
        for (const l of describeReports(reports)) out.line(l)
      }
      return exitForReports(reports)
    }
    if (sub === 'set') {
      if (name === undefined)
        throw new KithError('usage', `kith agent set needs a NAME\n\n${agentCommand.help()}`)
      const record = listAgentRecords(id.home).find((a) => a.name === name)
      if (record === undefined)
        throw new KithError('not-found', `no agent named ${name} on this node (kith agent list)`)
      if (record.command === undefined)
        throw new KithError('usage', `${name} is a key only (no command): nothing runs it here`)
      if (
        [allow, approvers, permissions, env, quorumN, quorumFor, maxSessions, maxWorktrees].every(
          (v) => v === undefined,
        )
      )
        throw new KithError(
          'usage',
          'kith agent set needs --allow, --approvers, --permissions, --env, --quorum, --for, --max-sessions or --max-worktrees',
        )
      const updated: AgentRecord = {
        ...record,
        ...(allow === undefined ? {} : { allow }),
        ...(approvers === undefined ? {} : { approvers }),
        ...(permissions === undefined ? {} : { permissions }),
        ...(env === undefined ? {} : { env }),
        ...caps,
      }
      // Replaced whole (or removed): --quorum 1 leaves none.
      const quorum = quorumSetting(record.quorum, quorumN, quorumFor).quorum
      if (quorum === undefined) delete updated.quorum
      else updated.quorum = quorum
      writeAgentRecord(id.home, updated)
      const live = await notifyDaemon('agents-changed')
      if (values.json) {
        out.json({
          name,
          allow: updated.allow ?? 'owner',
          approvers: updated.approvers ?? 'owner',
          permissions: updated.permissions ?? 'ask',
          quorum: updated.quorum ?? null,
          env: updated.env ?? [],
          maxSessions: updated.maxSessions ?? defaultMaxSessions,
          maxWorktrees: updated.maxWorktrees ?? defaultMaxWorktrees,
          applied: live ? 'now' : 'on the next kith up',
        })
        return 0
      }
      out.line(
        `${name}: prompts from ${describePolicy(updated.allow)}, approvals from ${describePolicy(updated.approvers)}, permissions ${updated.permissions ?? 'ask'}${updated.quorum === undefined ? '' : `, quorum ${updated.quorum.n} people for ${updated.quorum.for.join(',')}`}`,
      )
      out.line(
        live
          ? 'applied now by the running node' +
              (env === undefined ? '' : ' (--env from the next agent start)')
          : 'applied when kith up next starts',
      )
      return 0
    }
    if (sub === 'list') {
      if (name !== undefined) throw new KithError('usage', 'kith agent list takes no arguments')
      const opts = { json: values.json ?? false, all: values.all ?? false }
      return values.fleet ? listFleetAgents(node, now, opts, out) : listAgents(node, now, opts, out)
    }
    if (sub === 'rm') {
      if (name === undefined)
        throw new KithError('usage', `kith agent rm needs a NAME\n\n${agentCommand.help()}`)
      const record = listAgentRecords(id.home).find((a) => a.name === name)
      if (record === undefined)
        throw new KithError(
          'not-found',
          `no agent named ${name} on this node (kith agent list --all)`,
        )
      const d = book.authorize(record.pubkey, now)
      if (d.ok)
        throw new KithError(
          'usage',
          `${name} is still granted: kith agent revoke ${name} first (rm only forgets an agent whose key no longer counts)`,
        )
      removeAgentFiles(id.home, name)
      await notifyDaemon('agents-changed')
      if (values.json) out.json({ removed: name, agent: npub(record.pubkey), was: d.code })
      else
        out.line(
          `forgot ${name} ${npub(record.pubkey)} (${d.code}; its revocation stays): the name is free for kith agent add`,
        )
      return 0
    }
    if (sub === 'revoke') {
      if (name === undefined)
        throw new KithError(
          'usage',
          `kith agent revoke needs a NAME or NPUB\n\n${agentCommand.help()}`,
        )
      const local = listAgentRecords(id.home).find((a) => a.name === name)
      const row = local ? local.pubkey : resolveTarget(name, keyRows(node, 'agent', now), 'agent')
      const pubkey = typeof row === 'string' ? row : row.pubkey
      return revokeKey(node, pubkey, describeKey(node, pubkey), out, {
        json: values.json === true,
        yes: values.yes === true,
      })
    }
    throw new KithError(
      'usage',
      `unknown agent command ${JSON.stringify(sub)}\n\n${agentCommand.help()}`,
    )
  })
}

/** --max-sessions N, --max-worktrees N: a whole number from 1. */
/** `--quorum N`: 1 to 9 people (1 removes a quorum). */
function parseQuorumFlag(text: string | undefined): number | undefined {
  if (text === undefined) return undefined
  const n = /^[0-9]$/.test(text) ? Number(text) : NaN
  if (!(n >= 1 && n <= quorumMax))
    throw new KithError(
      'usage',
      `--quorum is a number of people from 1 to ${quorumMax} (got ${text})`,
    )
  return n
}

function forKinds(text: string): AcpToolKind[] {
  try {
    return parseToolKinds(text)
  } catch (err) {
    if (!(err instanceof KithError)) throw err
    throw new KithError('usage', err.message, { cause: err })
  }
}

/**
 * The record's quorum after --quorum and --for: either keeps the other's old value; --quorum 1
 * removes it; a quorum needs kinds to hold for.
 */
function quorumSetting(
  old: Quorum | undefined,
  n: number | undefined,
  kinds: AcpToolKind[] | undefined,
): { quorum?: Quorum } {
  const nextN = n ?? old?.n
  const nextFor = kinds ?? old?.for
  if (nextN === undefined || nextN < 2) {
    if (n === undefined && kinds !== undefined)
      throw new KithError(
        'usage',
        '--for says which tool kinds a quorum holds for: give --quorum N too',
      )
    return {}
  }
  if (nextFor === undefined)
    throw new KithError('usage', '--quorum N needs --for KINDS (for example --for execute,edit)')
  return { quorum: { n: nextN, for: nextFor } }
}

function parseCap(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined
  if (!/^[1-9][0-9]{0,5}$/.test(text))
    throw new KithError('usage', `${flag} takes a whole number from 1, got ${JSON.stringify(text)}`)
  return Number(text)
}

/** --env NAME,NAME: variable names to pass through; never Kith's own. */
function parseEnvNames(text: string | undefined): string[] | undefined {
  const names = parseList(text, 'env')
  if (names === undefined) return undefined
  for (const n of names) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(n))
      throw new KithError('usage', `--env: ${JSON.stringify(n)} is not a variable name`)
    if (/^KITH_/i.test(n))
      throw new KithError('usage', `--env: ${n} is Kith's own and never reaches an agent`)
  }
  return [...new Set(names)]
}
