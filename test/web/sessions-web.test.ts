// A phone does with sessions what the CLI does: start one in a project's worktree, set its mode,
// see its branch diff, close it, and see a closed one's diff.
import { execFileSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runKith, setupKith } from '../helpers/cli.js'
import { snap } from '../helpers/browser.js'
import { tempDir } from '../helpers/tmp.js'
import { pairedBrowser } from '../helpers/web-fleet.js'

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-C', cwd, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args], {
    encoding: 'utf8',
  })

describe(
  'sessions from the web app (real hub, nodes, git, the fake agent, Chromium)',
  { timeout: 300_000 },
  () => {
    it('starts a worktree session, sets its mode, shows its diff, closes it, and shows the closed one’s diff', async () => {
      const f = await pairedBrowser({ agentArgs: ['--modes', '--close'] })
      try {
        const source = join(tempDir(), 'repo')
        mkdirSync(source)
        git(source, 'init', '-q', '-b', 'main')
        writeFileSync(join(source, 'README.md'), 'hello wrold\n')
        git(source, 'add', '.')
        git(source, 'commit', '-q', '-m', 'first')
        const added = await setupKith(['project', 'add', 'app', source, '--worktrees'], {
          home: f.devbox,
        })
        expect(added.code, added.stderr).toBe(0)
        const { page } = f
        await page.goto(`${f.web}/#/fleet`)
        await page.getByRole('button', { name: 'New session' }).click()
        const form = page.getByRole('form', { name: 'New session' })
        await form.getByLabel('Project').fill('app')
        await form.getByLabel('in a worktree of its own').check()
        await form.getByLabel('First prompt').fill('pwd')
        await form.getByRole('button', { name: 'Start' }).click()
        const item = page.locator('li.session', { hasText: /branch kith\// })
        await item.waitFor({ timeout: 30_000 })
        const listed = JSON.parse(
          (await runKith(['session', 'list', '--json'], { home: f.devbox })).stdout,
        ) as {
          sessions: { worktree?: { path: string } }[]
        }
        const tree = listed.sessions.find((s) => s.worktree !== undefined)!.worktree!.path
        writeFileSync(join(tree, 'README.md'), 'hello world\n')

        // Its mode, as kith session set does.
        await item.getByLabel('mode').selectOption('plan')
        await item.getByRole('button', { name: 'Set mode' }).click()
        await item
          .getByRole('status')
          .getByText("✓ claude: this session's mode plan set")
          .waitFor({ timeout: 30_000 })
        await item.locator('.details', { hasText: 'mode plan' }).waitFor({ timeout: 30_000 })

        // Its diff, as kith session diff shows it.
        await item.getByRole('button', { name: 'Diff' }).click()
        const diff = item.getByRole('figure', { name: 'session diff' })
        await diff.waitFor({ timeout: 30_000 })
        expect(await diff.locator('.del').allTextContents()).toContain('-hello wrold\n')
        expect(await diff.locator('.add').allTextContents()).toContain('+hello world\n')
        await snap(page, 'session-diff')

        // Closing with uncommitted work is refused, saying what is there; committed, it closes.
        await item.getByRole('button', { name: 'Close' }).click()
        await item
          .getByRole('status')
          .getByText(
            /did not close the session: its worktree .* has 1 uncommitted file \(README.md\)/,
          )
          .waitFor({ timeout: 30_000 })
        git(tree, 'commit', '-q', '-am', 'fix')
        // With closed sessions listed, the closed one stays in view with the host's answer.
        await page.getByLabel('closed ones too').check()
        await item.getByRole('button', { name: 'Close' }).click()
        await item
          .getByRole('status')
          .getByText(/✓ claude closed this session/)
          .waitFor({ timeout: 30_000 })

        // Closed: its branch's diff still shows.
        const closed = page.locator('li.session.closed', { hasText: /branch kith\// })
        await closed.waitFor({ timeout: 30_000 })
        await closed.getByRole('button', { name: 'Diff' }).click()
        await closed
          .getByRole('figure', { name: 'session diff' })
          .getByText('+hello world')
          .waitFor({ timeout: 30_000 })
        expect(f.problems).toEqual([])
      } finally {
        await f.stop()
      }
    })
  },
)
