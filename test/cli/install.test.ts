import { execFile } from 'node:child_process'
import { cpSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { tempDir } from '../helpers/tmp.js'

const run = promisify(execFile)
const repo = new URL('../..', import.meta.url).pathname
const version = (
  JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { version: string }
).version

/** What a fresh clone holds: the files git tracks or would track, none it ignores (no dist/). */
async function cloneLike(to: string): Promise<void> {
  const { stdout } = await run(
    'git',
    ['ls-files', '-z', '--cached', '--others', '--exclude-standard'],
    {
      cwd: repo,
      maxBuffer: 16 * 1024 * 1024,
    },
  )
  for (const file of stdout.split('\0').filter((f) => f !== '')) {
    // A file deleted in the work tree but still in the index is not in a clone of this tree.
    try {
      cpSync(join(repo, file), join(to, file), { recursive: false })
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    }
  }
  // The dependencies `npm ci` would install, without installing them again.
  symlinkSync(join(repo, 'node_modules'), join(to, 'node_modules'))
}

describe('kith as an installed CLI', { timeout: 300_000 }, () => {
  it('npm pack on a fresh clone builds on prepack; the tarball ships no maps or screenshots; installed into a fresh prefix, kith runs', async () => {
    const root = tempDir()
    const clone = join(root, 'clone')
    mkdirSync(clone)
    await cloneLike(clone)
    // A test run's screenshots, left where the browser tier writes them: not for the package.
    mkdirSync(join(clone, 'dist/screenshots'), { recursive: true })
    writeFileSync(join(clone, 'dist/screenshots/chat.png'), 'png')

    await run('npm', ['pack', '--pack-destination', root, '--no-fund'], {
      cwd: clone,
      maxBuffer: 16 * 1024 * 1024,
    })
    const tarball = readdirSync(root).find((f) => f.endsWith('.tgz'))
    expect(tarball).toBe(`kith-${version}.tgz`)
    const listing = (await run('tar', ['tzf', join(root, tarball!)])).stdout.split('\n')
    expect(listing).toContain('package/dist/cli/main.js')
    expect(listing).toContain('package/dist/web/app/index.html')
    expect(listing.filter((f) => /\.map$|screenshots|tsbuildinfo/.test(f))).toEqual([])

    // Installed as a person would, into a prefix of its own. Scripts are skipped (the native
    // modules' prebuilt downloads are not what this checks) and the cache is used when it can be.
    const prefix = join(root, 'prefix')
    await run(
      'npm',
      [
        'install',
        '--global',
        '--prefix',
        prefix,
        '--prefer-offline',
        '--ignore-scripts',
        '--no-audit',
        '--no-fund',
        join(root, tarball!),
      ],
      { cwd: root, maxBuffer: 16 * 1024 * 1024 },
    )
    const kith = join(prefix, 'bin/kith')
    const env = { ...process.env, KITH_HOME: join(root, 'home') }
    expect((await run(kith, ['--version'], { env })).stdout.trim()).toBe(version)
    const help = (await run(kith, ['--help'], { env })).stdout
    expect(help).toMatch(/^Usage: kith COMMAND/m)
    expect(help).toMatch(/^ {2}up /m)
  })
})
