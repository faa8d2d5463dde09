import { describe, expect, it } from 'vitest'
import { renderInline, renderMarkdown, visibleWidth, wrap } from '../../src/cli/terminal-text.js'

const plain = (md: string, width = 40) => renderMarkdown(md, { width, color: false })

describe('wrapping for a terminal', () => {
  it('breaks at word boundaries, never mid-word, with a hanging indent', () => {
    const lines = wrap('the quick brown fox jumps over the lazy dog again and again', 20, 4)
    expect(lines).toEqual([
      'the quick brown fox',
      '    jumps over the',
      '    lazy dog again',
      '    and again',
    ])
    for (const l of lines) expect(visibleWidth(l)).toBeLessThanOrEqual(20)
    // Every word is whole on some line.
    expect(lines.join(' ').split(/\s+/).filter(Boolean)).toEqual(
      'the quick brown fox jumps over the lazy dog again and again'.split(' '),
    )
  })

  it('keeps a word longer than the line whole, on its own line', () => {
    const url = 'https://example.com/a/very/long/path/that/does/not/fit'
    expect(wrap(`see ${url} now`, 20)).toEqual(['see', url, 'now'])
  })

  it('counts ANSI styles as nothing and wide characters as two', () => {
    expect(visibleWidth('\u001b[1mbold\u001b[22m')).toBe(4)
    expect(visibleWidth('日本')).toBe(4)
    expect(visibleWidth('a🔐b')).toBe(4)
  })
})

describe('markdown for a terminal', () => {
  it('drops emphasis markers, keeps inline code visible, spells out links', () => {
    expect(renderInline('a **bold** and *em* and _em_ in snake_case_name', false)).toBe(
      'a bold and em and em in snake_case_name',
    )
    expect(renderInline('run `npm test` or `a*b*c`', false)).toBe('run `npm test` or `a*b*c`')
    expect(renderInline('[docs](https://x.dev/d) and [https://y](https://y)', false)).toBe(
      'docs (https://x.dev/d) and https://y',
    )
    expect(renderInline('**x**', true)).toBe('\u001b[1mx\u001b[22m')
    expect(renderInline('`x`', true)).toBe('\u001b[36mx\u001b[39m')
  })

  it('renders headings, lists with hanging indents, quotes, rules and code blocks', () => {
    const md = [
      '## Why the build is red',
      '',
      'The **auth** tests fail:',
      '- the token fixture expired yesterday at midnight so every request is refused',
      '  1. nested step',
      '- [x] done item',
      '> quoted words here',
      '---',
      '```ts',
      'const   x = 1 // not wrapped, not reflowed, even when it is longer than the width given',
      '```',
      '',
      '',
      'Done.',
    ].join('\n')
    expect(plain(md)).toEqual([
      'Why the build is red',
      '',
      'The auth tests fail:',
      '• the token fixture expired yesterday at',
      '  midnight so every request is refused',
      '  1. nested step',
      '• ☑ done item',
      '│ quoted words here',
      '────────────────────────────────────────',
      '│ const   x = 1 // not wrapped, not reflowed, even when it is longer than the width given',
      '',
      'Done.',
    ])
  })

  it('keeps the line breaks of a plain-text answer, and an unclosed fence as code', () => {
    expect(plain('line one\nline two\n\n\nafter')).toEqual(['line one', 'line two', '', 'after'])
    expect(plain('```\nstill code')).toEqual(['│ still code'])
  })
})
