// An ACP client this project did not write: acpx (openclaw/acpx, pinned in test/agents/pinned),
// used as its README says: `acpx --agent '<command>' sessions new`, then prompts, `set-mode`,
// `set model`, and its permission flags. The agent command is `kith acp AGENT@devbox` on the
// laptop; the agent runs on the devbox (the fake ACP agent, then claude-agent-acp against the
// mock model). What acpx prints is what the remote agent did.
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { kithBin } from '../../scripts/hub-process.js'
import { runKith } from '../helpers/cli.js'
import { pinnedFile, startFleet, type Fleet, proofTurn } from './fleet.js'
import { startMockModel, type MockModel } from './mock-model.js'

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))

interface Acpx {
  (args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }>
}

/**
 * acpx as a person on the laptop runs it, in a project directory, with its own HOME (acpx keeps
 * its sessions in ~/.acpx) and the laptop's KITH_HOME, which `kith acp` inherits. `--agent` is
 * the README's way to a custom ACP server; acpx starts it once per session and keeps it (its
 * queue owner) between commands.
 */
function acpxOn(fleet: Fleet, target: string): Acpx {
  const bin = pinnedFile('acpx', 'dist', 'cli.js')
  const home = join(fleet.dir, 'acpx-home')
  const cwd = join(fleet.dir, 'project')
  mkdirSync(home, { recursive: true })
  mkdirSync(cwd, { recursive: true })
  const agent = `${process.execPath} ${kithBin} acp ${target}`
  return (args) =>
    new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [bin, '--agent', agent, ...args], {
        cwd,
        env: { ...process.env, HOME: home, KITH_HOME: fleet.laptop },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let stdout = ''
      let stderr = ''
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
      child.on('error', reject)
      child.on('close', (code) => resolve({ code, stdout, stderr }))
    })
}

/** The permission decisions in the devbox's #acp: who signed each, and what it chose. */
async function decisions(fleet: Fleet): Promise<[string, unknown][]> {
  const log = await runKith(['log', '#acp', '--json'], { home: fleet.devbox })
  expect(log.code, log.stderr).toBe(0)
  return log.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { from: { name: string }; content: string })
    .filter((i) => i.content.startsWith('{"optionId"'))
    .map((d) => [d.from.name, JSON.parse(d.content) as unknown])
}

let model: MockModel
beforeAll(async () => {
  model = await startMockModel()
})
afterAll(async () => {
  await model.close()
})

describe(
  'acpx (an ACP client from the registry) in front of kith acp',
  { timeout: 240_000 },
  () => {
    it('makes a session, gets the answer, sets the mode and the model, and answers permission requests with its flags', async () => {
      const fleet = await startFleet({
        name: 'fake',
        command: [process.execPath, fakeAgent, '--modes', '--models'],
      })
      const acpx = acpxOn(fleet, 'fake@devbox')

      const made = await acpx(['sessions', 'new'])
      expect(made.code, made.stderr).toBe(0)
      const sessionId = made.stdout.trim()
      expect(sessionId).toMatch(/^kith-[0-9a-f]{16}$/)

      // The fake agent on the devbox answers with the session's mode and model.
      const first = await acpx(['prompt', 'mode'])
      expect(first.code, first.stderr).toBe(0)
      expect(first.stdout).toContain('mode: default, model: fake-large')
      expect(first.stdout).toContain('[done] end_turn')

      // `set model` needs the model among the session's config options: kith acp tells them
      // (config_option_update) once the host has reported the session.
      const model = await acpx(['set', 'model', 'fake-small'])
      expect(model.code, model.stderr).toBe(0)
      const mode = await acpx(['set-mode', 'plan'])
      expect(mode.code, mode.stderr).toBe(0)
      expect(mode.stdout.trim()).toBe('mode set: plan')
      const after = await acpx(['prompt', 'mode'])
      expect(after.code, after.stderr).toBe(0)
      expect(after.stdout).toContain('mode: plan, model: fake-small')

      // acpx answers the agent's permission request itself: --approve-all picks allow, --deny-all
      // reject; each answer is a decision the laptop signs, which the devbox checks and applies.
      const allowed = await acpx(['--approve-all', 'prompt', 'permission deploy the app'])
      expect(allowed.code, allowed.stderr).toBe(0)
      expect(allowed.stdout).toContain('permission: selected allow')
      const denied = await acpx(['--deny-all', 'prompt', 'permission drop the table'])
      expect(denied.code, denied.stderr).toBe(0)
      expect(denied.stdout).toContain('permission: selected reject')
      expect(await decisions(fleet)).toEqual([
        ['laptop', { optionId: 'allow' }],
        ['laptop', { optionId: 'reject' }],
      ])

      // All of it was one session: one thread, which the host reports in the mode and model acpx
      // chose.
      await expect
        .poll(async () => {
          const r = await runKith(['session', 'list', '--json'], { home: fleet.laptop })
          const { sessions } = JSON.parse(r.stdout) as {
            sessions: { agentName: string; mode?: string; model?: string }[]
          }
          return sessions
            .filter((x) => x.agentName === 'fake')
            .map((x) => ({ mode: x.mode, model: x.model }))
        })
        .toEqual([{ mode: 'plan', model: 'fake-small' }])
      const shown = await acpx(['sessions', 'show'])
      expect(shown.code, shown.stderr).toBe(0)
      expect(shown.stdout).toContain(sessionId)
      const closed = await acpx(['sessions', 'close'])
      expect(closed.code, closed.stderr).toBe(0)
      expect(closed.stdout.trim()).toBe(sessionId)
    })

    it('claude-agent-acp on the devbox: answers, and runs its Bash call once acpx --approve-all approved it', async () => {
      model.respond((req) => {
        if (req.lastUserText.includes('what is the build status'))
          return { text: 'The build is green (mock Claude).' }
        if (req.lastUserText.includes('write the proof file')) return proofTurn('Bash', req)
        return { text: 'unexpected request' }
      })
      const fleet = await startFleet({
        name: 'claude',
        command: [
          process.execPath,
          pinnedFile('@zed-industries', 'claude-agent-acp', 'dist', 'index.js'),
        ],
        env: {
          ANTHROPIC_BASE_URL: model.origin,
          ANTHROPIC_API_KEY: 'not-a-key',
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        },
      })
      const acpx = acpxOn(fleet, 'claude@devbox')
      const made = await acpx(['sessions', 'new'])
      expect(made.code, made.stderr).toBe(0)
      const asked = await acpx(['prompt', 'what is the build status?'])
      expect(asked.code, asked.stderr).toBe(0)
      expect(asked.stdout).toContain('The build is green (mock Claude).')

      const proof = join(fleet.agentCwd, 'proof.txt')
      expect(existsSync(proof)).toBe(false)
      const ran = await acpx(['--approve-all', 'prompt', 'write the proof file'])
      expect(ran.code, ran.stderr).toBe(0)
      // acpx showed the call and its output as the devbox ran it, then the model's answer.
      expect(ran.stdout).toContain('[client] session/request_permission')
      expect(ran.stdout).toContain('The tool said: kith-tool-ran')
      expect(readFileSync(proof, 'utf8').trim()).toBe('kith-tool-ran')
      // Of claude's options (Always Allow first, then Allow, Reject) acpx picked Allow, once; the
      // laptop signed it.
      expect(await decisions(fleet)).toEqual([['laptop', { optionId: 'allow' }]])

      // Claude Code's own plan mode, set from acpx, applied by the devbox's host.
      const plan = await acpx(['set-mode', 'plan'])
      expect(plan.code, plan.stderr).toBe(0)
      expect(plan.stdout.trim()).toBe('mode set: plan')
      await expect
        .poll(async () => {
          const r = await runKith(['session', 'list', '--json'], { home: fleet.laptop })
          const { sessions } = JSON.parse(r.stdout) as {
            sessions: { agentName: string; mode?: string }[]
          }
          return sessions.filter((x) => x.agentName === 'claude').map((x) => x.mode)
        })
        .toEqual(['plan'])
    })
  },
)
