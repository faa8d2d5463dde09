import { describe, expect, it } from 'vitest'
import { WorkLog, workOf, workTagMaxBytes, workTags } from '../../src/events/turn-work.js'

const bytes = (s: string) => new TextEncoder().encode(s).length

describe("a turn's work kept with its answer (work tags)", () => {
  it('folds tool calls, their last status, diff and output end, and reads them back', () => {
    const log = new WorkLog()
    log.note({ sessionUpdate: 'tool_call', toolCallId: 'a', title: 'npm test', kind: 'execute' })
    log.note({
      sessionUpdate: 'tool_call_update',
      toolCallId: 'a',
      status: 'completed',
      content: [{ type: 'content', content: { type: 'text', text: '12 passing' } }],
    })
    log.note({
      sessionUpdate: 'tool_call',
      toolCallId: 'b',
      title: 'Edit x',
      kind: 'edit',
      status: 'failed',
      content: [{ type: 'diff', path: 'x', oldText: 'a\n', newText: 'b\n' }],
    })
    log.note({ sessionUpdate: 'kith_auto_allowed', toolCallId: 'a', policy: 'allow-all' })
    log.note({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'hi' } })
    const tags = workTags(log.tools())
    expect(tags.map((t) => t[0])).toEqual(['work', 'work'])
    expect(workOf({ tags })).toEqual({
      omitted: 0,
      tools: [
        {
          id: 'a',
          title: 'npm test',
          kind: 'execute',
          status: 'completed',
          output: '12 passing',
          allowedBy: 'allow-all',
        },
        {
          id: 'b',
          title: 'Edit x',
          kind: 'edit',
          status: 'failed',
          diff: '--- a/x\n+++ b/x\n@@ -1,1 +1,1 @@\n-a\n+b',
        },
      ],
    })
  })

  it('bounds each tag and the whole; the newest calls are kept and the rest counted', () => {
    const log = new WorkLog()
    for (let i = 0; i < 40; i++)
      log.note({
        sessionUpdate: 'tool_call',
        toolCallId: `t${i}`,
        title: `step ${i}`,
        kind: 'edit',
        content: [
          { type: 'diff', path: 'f', oldText: 'x\n'.repeat(900), newText: 'y\n'.repeat(900) },
          { type: 'content', content: { type: 'text', text: 'out '.repeat(2000) } },
        ],
      })
    const tags = workTags(log.tools(), 8192)
    for (const t of tags) expect(bytes(t[1]!)).toBeLessThanOrEqual(workTagMaxBytes)
    expect(tags.reduce((n, t) => n + (t[0] === 'work' ? bytes(t[1]!) : 0), 0)).toBeLessThanOrEqual(
      8192,
    )
    const read = workOf({ tags })
    expect(read.tools.at(-1)?.id).toBe('t39')
    expect(read.omitted + read.tools.length).toBe(40)
    expect(read.tools[0]!.output).toMatch(/^… \(\d+ bytes before\)\n/)
    expect(read.tools[0]!.diff).toMatch(/… truncated: \d+ of \d+ bytes shown$/)
  })
})
