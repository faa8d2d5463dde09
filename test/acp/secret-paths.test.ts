import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { realPath } from '../../src/acp/real-path.js'
import { secretTouched, type ToolCallView } from '../../src/acp/secret-paths.js'
import { tempDir } from '../helpers/tmp.js'

/** A home with KITH_HOME at ~/.kith and a project at ~/src/app (real directories). */
function machine() {
  const home = tempDir()
  const kithHome = join(home, '.kith')
  const cwd = join(home, 'src', 'app')
  mkdirSync(join(kithHome, 'agents'), { recursive: true })
  mkdirSync(cwd, { recursive: true })
  writeFileSync(join(kithHome, 'owner.key'), 'secret')
  return { home, kithHome, cwd, realpath: realPath }
}

const read = (path: string, more: Partial<ToolCallView> = {}): ToolCallView => ({
  kind: 'read',
  title: `Read ${path}`,
  rawInput: { path },
  locations: [{ path }],
  ...more,
})

describe('secretTouched', () => {
  it("names KITH_HOME's keys, however the path is written", () => {
    const m = machine()
    const why = "touches KITH_HOME/owner.key: Kith's keys"
    expect(secretTouched(read(join(m.kithHome, 'owner.key')), m)).toBe(why)
    expect(secretTouched(read('~/.kith/owner.key'), m)).toBe(why)
    expect(secretTouched(read('$HOME/.kith/owner.key'), m)).toBe(why)
    expect(secretTouched(read('../../.kith/owner.key'), m)).toBe(why)
    expect(secretTouched(read(`${m.cwd}/../x/../../.kith/./owner.key`), m)).toBe(why)
    expect(secretTouched(read(join(m.kithHome, 'agents', 'bot.key')), m)).toBe(
      "touches KITH_HOME/agents/bot.key: Kith's agent keys",
    )
    expect(secretTouched(read(join(m.kithHome, 'node.db')), m)).toBe(
      "touches KITH_HOME/node.db: Kith's database (grants, chat, outbox)",
    )
  })

  it('follows symlinks (before a later ..), as the kernel does', () => {
    const m = machine()
    // A harmless-looking link in the project that leads into KITH_HOME.
    symlinkSync(m.kithHome, join(m.cwd, 'vendor'))
    expect(secretTouched(read('vendor/owner.key'), m)).toBe(
      "touches KITH_HOME/owner.key: Kith's keys",
    )
    // A link to KITH_HOME/agents, then `..`: the kernel lands in KITH_HOME, not in the project.
    symlinkSync(join(m.kithHome, 'agents'), join(m.cwd, 'deps'))
    expect(secretTouched(read('deps/../owner.key'), m)).toBe(
      "touches KITH_HOME/owner.key: Kith's keys",
    )
    // A file that does not exist yet, below a link: still inside.
    expect(secretTouched(read('vendor/new/file.txt'), m)).toBe(
      "touches KITH_HOME/new/file.txt: Kith's state",
    )
  })

  it("names the usual credentials of the user's home, and secret files anywhere", () => {
    const m = machine()
    expect(secretTouched(read('~/.ssh/id_ed25519'), m)).toBe('touches ~/.ssh: SSH keys')
    expect(secretTouched(read('~/.aws/credentials'), m)).toBe('touches ~/.aws: AWS credentials')
    expect(secretTouched(read('~/.config/gcloud/adc.json'), m)).toMatch(/Google Cloud/)
    expect(secretTouched(read('~/.kube/config'), m)).toMatch(/Kubernetes/)
    expect(secretTouched(read('~/.gnupg/private-keys-v1.d'), m)).toMatch(/GnuPG/)
    expect(secretTouched(read('~/.netrc'), m)).toMatch(/netrc/)
    expect(secretTouched(read('~/.docker/config.json'), m)).toMatch(/Docker/)
    expect(secretTouched(read('.env'), m)).toBe(
      'touches .env: an environment file (usually secrets)',
    )
    expect(secretTouched(read('config/.env.production'), m)).toMatch(/environment file/)
    expect(secretTouched(read('deploy/id_rsa'), m)).toMatch(/SSH private key/)
    // Ordinary project files are not secrets.
    expect(secretTouched(read('src/index.ts'), m)).toBeUndefined()
    expect(secretTouched(read('.env.example'), m)).toBeUndefined()
    expect(secretTouched(read('~/.sshrc-notes'), m)).toBeUndefined()
  })

  it('reads command lines word by word, and counts a directory above a secret for tree walks', () => {
    const m = machine()
    const exec = (command: string): ToolCallView => ({
      kind: 'execute',
      title: command,
      rawInput: { command },
    })
    expect(secretTouched(exec('cat ~/.kith/owner.key | base64'), m)).toBe(
      "touches KITH_HOME/owner.key: Kith's keys",
    )
    expect(secretTouched(exec('cp "$HOME/.ssh/id_rsa" /tmp/x'), m)).toBe('touches ~/.ssh: SSH keys')
    expect(secretTouched(exec('tar czf /tmp/all.tgz --exclude=node_modules ~'), m)).toMatch(
      /^reaches KITH_HOME \(under ~\)/,
    )
    expect(secretTouched(exec('cat ~/.k*/owner.key'), m)).toMatch(/^reaches KITH_HOME/)
    expect(secretTouched(exec('npm test -- --watch=false'), m)).toBeUndefined()
    // A search with no path searches the cwd; in a project, that is fine.
    expect(secretTouched({ kind: 'search', title: 'grep token', rawInput: {} }, m)).toBeUndefined()
    expect(
      secretTouched({ kind: 'search', title: 'grep', rawInput: { pattern: 'x', path: '~' } }, m),
    ).toMatch(/^reaches KITH_HOME \(under ~\)/)
    expect(
      secretTouched({ kind: 'search', title: 'grep token', rawInput: {} }, { ...m, cwd: m.home }),
    ).toMatch(/^reaches KITH_HOME/)
    // A plain read of a directory above is a listing, not its contents.
    expect(secretTouched(read('~'), m)).toBeUndefined()
  })

  it('reads diffs by their path, not their text, and adapters own key names', () => {
    const m = machine()
    const edit: ToolCallView = {
      kind: 'edit',
      title: 'Edit README.md',
      rawInput: { file_path: 'README.md', new_string: 'see ~/.ssh/config and ~/.kith/owner.key' },
      content: [{ type: 'diff', path: join(m.cwd, 'README.md'), newText: '~/.ssh/id_rsa' }],
    }
    expect(secretTouched(edit, m)).toBeUndefined()
    expect(
      secretTouched(
        { ...edit, content: [{ type: 'diff', path: join(m.kithHome, 'config.json') }] },
        m,
      ),
    ).toBe("touches KITH_HOME/config.json: Kith's state")
    expect(
      secretTouched({ kind: 'read', title: 'Read', rawInput: { abs_path: '~/.aws/config' } }, m),
    ).toMatch(/AWS/)
  })
})
