import { describe, expect, it } from 'vitest'
import { diffLines, foldedLines, planLines, usageLine } from '../../src/cli/review-lines.js'
import { TranscriptLines } from '../../src/cli/transcript.js'
import type { WatchFrame } from '../../src/node/observer-frames.js'

describe('agent work shown for review', () => {
  it('a plan as a checklist', () => {
    expect(
      planLines([
        { content: 'Read greeting.ts', status: 'completed' },
        { content: 'Fix the typo', status: 'in_progress' },
        { content: 'Run the tests', status: 'pending' },
      ]),
    ).toEqual(['plan (1/3 done):', '  ☑ Read greeting.ts', '  ◐ Fix the typo', '  ☐ Run the tests'])
  })

  it('an ACP diff as a unified diff, with context and merged hunks', () => {
    const old = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l'].join('\n') + '\n'
    const next = old.replace('b\n', 'B\n').replace('k\n', 'k\nk2\n')
    expect(diffLines('src/x.ts', old, next)).toEqual([
      '--- a/src/x.ts',
      '+++ b/src/x.ts',
      '@@ -1,5 +1,5 @@',
      ' a',
      '-b',
      '+B',
      ' c',
      ' d',
      ' e',
      '@@ -9,4 +9,5 @@',
      ' i',
      ' j',
      ' k',
      '+k2',
      ' l',
    ])
    expect(diffLines('new.ts', null, 'x\n')).toEqual([
      '--- /dev/null',
      '+++ b/new.ts',
      '@@ -0,0 +1,1 @@',
      '+x',
    ])
  })

  it("folds a tool's long output, and says usage in one line", () => {
    expect(foldedLines('1\n2\n3\n4\n5\n')).toEqual([
      '  │ 1',
      '  │ 2',
      '  │ 3',
      '  │ … 2 more lines',
    ])
    expect(usageLine({ used: 1200, size: 200000, cost: { amount: 0.05, currency: 'USD' } })).toBe(
      'usage: 1200/200000 tokens in context, 0.05 USD',
    )
  })

  it('kith watch shows them under the agent and channel', () => {
    const frame: WatchFrame = {
      agent: { pubkey: 'a'.repeat(64), name: 'bot', role: 'agent' },
      channel: 'ops',
      prompt: 'p1',
      updates: [
        { sessionUpdate: 'plan', entries: [{ content: 'Fix it', status: 'pending' }] },
        {
          sessionUpdate: 'tool_call',
          toolCallId: 'e1',
          title: 'Edit g.ts',
          status: 'pending',
          content: [{ type: 'diff', path: 'g.ts', oldText: 'wrold\n', newText: 'world\n' }],
        },
        { sessionUpdate: 'tool_call_update', toolCallId: 'e1', status: 'completed' },
      ],
    }
    expect(new TranscriptLines().frame(frame, 0)).toEqual([
      'bot #ops: plan (0/1 done):',
      'bot #ops:   ☐ Fix it',
      'bot #ops: ⚙ Edit g.ts (pending)',
      'bot #ops: --- a/g.ts',
      'bot #ops: +++ b/g.ts',
      'bot #ops: @@ -1,1 +1,1 @@',
      'bot #ops: -wrold',
      'bot #ops: +world',
      'bot #ops: ⚙ Edit g.ts → completed',
    ])
  })
})
