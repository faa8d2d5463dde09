import { describe, expect, it } from 'vitest'
import { finalizeEvent, generateSecretKey, getPublicKey } from 'nostr-tools/pure'
import { boundPreview, callPreview, previewMaxBytes } from '../../src/events/permission-preview.js'
import {
  makePermissionRequest,
  parsePermissionRequest,
  type PermissionRequestSpec,
} from '../../src/events/permission-request.js'
import { KithError } from '../../src/errors.js'

const bytes = (s: string) => new TextEncoder().encode(s).length

describe('what a permission card shows of its tool call (preview)', () => {
  it("an edit's ACP diff content as a unified diff", () => {
    const preview = callPreview({
      toolKind: 'edit',
      title: 'Edit README.md',
      content: [
        {
          type: 'diff',
          path: 'README.md',
          oldText: '# App\nhello wrold\nbye\n',
          newText: '# App\nhello world\nbye\n',
        },
      ],
    })
    expect(preview?.split('\n')).toEqual([
      '--- a/README.md',
      '+++ b/README.md',
      '@@ -1,3 +1,3 @@',
      ' # App',
      '-hello wrold',
      '+hello world',
      ' bye',
    ])
  })

  it("an agent's absolute paths are shown as git shows them, relative to the session's cwd", () => {
    const preview = callPreview({
      toolKind: 'edit',
      title: 'Edit',
      cwd: '/tmp/app.worktrees/claude-1a2b',
      content: [
        {
          type: 'diff',
          path: '/tmp/app.worktrees/claude-1a2b/src/x.ts',
          oldText: 'a\n',
          newText: 'b\n',
        },
        {
          type: 'diff',
          path: '/tmp/app.worktrees/claude-1a2b/new.md',
          oldText: null,
          newText: 'n\n',
        },
      ],
    })
    expect(preview?.split('\n').filter((l) => /^(---|\+\+\+) /.test(l))).toEqual([
      '--- a/src/x.ts',
      '+++ b/src/x.ts',
      '--- /dev/null',
      '+++ b/new.md',
    ])
  })

  it("an edit told only in rawInput (old_string/new_string, or a new file's content)", () => {
    expect(
      callPreview({
        toolKind: 'edit',
        title: 'Edit',
        rawInput: { file_path: '/p/a.ts', old_string: 'let x = 1', new_string: 'let x = 2' },
      }),
    ).toBe('--- /p/a.ts\n+++ /p/a.ts\n@@ -1,1 +1,1 @@\n-let x = 1\n+let x = 2')
    expect(
      callPreview({
        toolKind: 'edit',
        title: 'Write',
        rawInput: { path: 'n.txt', content: 'hi\n' },
      }),
    ).toBe('--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,1 @@\n+hi')
  })

  it("an execute's command and cwd: its own cwd, else the session's", () => {
    expect(
      callPreview({
        toolKind: 'execute',
        title: 'Run tests',
        rawInput: { command: 'npm test -- --bail', cwd: '/srv/app' },
        cwd: '/home/a',
      }),
    ).toBe('$ npm test -- --bail\nin /srv/app')
    expect(
      callPreview({
        toolKind: 'execute',
        title: 'x',
        rawInput: { command: ['git', 'push'], args: ['--force'] },
        cwd: '/home/a/app',
      }),
    ).toBe('$ git push --force\nin /home/a/app')
    // opencode: the title is the command line, nothing in rawInput.
    expect(callPreview({ toolKind: 'execute', title: 'rm -rf build', cwd: '/w' })).toBe(
      '$ rm -rf build\nin /w',
    )
  })

  it("a read's path (with its line), else the raw input as JSON, else nothing", () => {
    expect(
      callPreview({ toolKind: 'read', title: 'Read', locations: [{ path: '/p/b.ts', line: 12 }] }),
    ).toBe('/p/b.ts:12')
    expect(callPreview({ toolKind: 'read', title: 'Read', rawInput: { path: 'c.md' } })).toBe(
      'c.md',
    )
    expect(callPreview({ toolKind: 'fetch', title: 'Fetch', rawInput: { url: 'https://x' } })).toBe(
      '{\n  "url": "https://x"\n}',
    )
    expect(callPreview({ toolKind: 'think', title: 'Think' })).toBeUndefined()
  })

  it('a long preview is cut at a line end within the bound, with a marker and the total', () => {
    const text = Array.from({ length: 2000 }, (_, i) => `+line ${i} ✓ changed`).join('\n')
    const total = bytes(text)
    const bounded = boundPreview(text)
    expect(bytes(bounded.preview)).toBeLessThanOrEqual(previewMaxBytes)
    expect(bounded.previewBytes).toBe(total)
    const lines = bounded.preview.split('\n')
    expect(lines.at(-1)).toMatch(new RegExp(`^… truncated: \\d+ of ${total} bytes shown$`))
    // Every line shown is whole.
    for (const l of lines.slice(0, -1)) expect(l).toMatch(/^\+line \d+ ✓ changed$/)
    expect(boundPreview('short')).toEqual({ preview: 'short' })
  })

  it('a request carries the preview, and a reader refuses one over the bound', () => {
    const sk = generateSecretKey()
    const spec: PermissionRequestSpec = {
      channel: 'ops',
      fleet: getPublicKey(sk),
      prompt: 'a'.repeat(64),
      prompter: 'b'.repeat(64),
      title: 'Edit a',
      toolKind: 'edit',
      options: [{ optionId: 'allow', name: 'Allow', kind: 'allow_once' }],
      expires: 100,
      toolCallId: 't',
      sessionId: 's',
      input: 'c'.repeat(64),
      nonce: '0123456789abcdef',
      preview: '-a\n+b',
      previewBytes: 99_999,
    }
    const ok = finalizeEvent(makePermissionRequest(spec, 1), sk)
    expect(parsePermissionRequest(ok)).toMatchObject({ preview: '-a\n+b', previewBytes: 99_999 })
    const big = finalizeEvent(
      makePermissionRequest({ ...spec, preview: 'x'.repeat(previewMaxBytes + 1) }, 1),
      sk,
    )
    expect(() => parsePermissionRequest(big)).toThrow(KithError)
  })
})
