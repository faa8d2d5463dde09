import { describe, expect, it } from 'vitest'
import { TranscriptLines } from '../../src/cli/transcript.js'
import type { WatchFrame } from '../../src/node/observer-frames.js'

const frame = (updates: unknown[], prompt = 'p1'): WatchFrame => ({
  agent: { pubkey: 'a'.repeat(64), name: 'oc', role: 'agent' },
  channel: 'ops',
  prompt,
  updates,
})
const chunk = (text: string, kind = 'agent_message_chunk') => ({
  sessionUpdate: kind,
  content: { type: 'text', text },
})

describe('an agent side transcript as lines', () => {
  it('gathers streamed chunks into whole lines', () => {
    const t = new TranscriptLines()
    expect(t.frame(frame([chunk('The'), chunk(' build'), chunk(' is')]), 0)).toEqual([])
    expect(t.frame(frame([chunk(' green.\nTests'), chunk(' pass')]), 10)).toEqual([
      'oc #ops: The build is green.',
    ])
    // Something else ends the half line; a tool call update keeps its call's title.
    expect(
      t.frame(
        frame([
          { sessionUpdate: 'tool_call', toolCallId: 't1', title: 'npm test', status: 'pending' },
          { sessionUpdate: 'tool_call_update', toolCallId: 't1', status: 'completed' },
        ]),
        20,
      ),
    ).toEqual([
      'oc #ops: Tests pass',
      'oc #ops: ⚙ npm test (pending)',
      'oc #ops: ⚙ npm test → completed',
    ])
  })

  it('keeps thoughts apart from messages, and prints a half line after a quiet spell or at the end', () => {
    const t = new TranscriptLines()
    t.frame(
      frame([chunk('Let me', 'agent_thought_chunk'), chunk(' look', 'agent_thought_chunk')]),
      0,
    )
    expect(t.frame(frame([chunk('Found it')]), 5)).toEqual(['oc #ops: … Let me look'])
    expect(t.flushQuiet(100, 1500)).toEqual([])
    expect(t.flushQuiet(2000, 1500)).toEqual(['oc #ops: Found it'])
    t.frame(frame([chunk('tail')], 'p2'), 0)
    expect(
      t.frame(
        frame([{ sessionUpdate: 'kith_turn', state: 'ended', outcome: 'answered' }], 'p2'),
        1,
      ),
    ).toEqual(['oc #ops: tail', 'oc #ops: ■ turn ended (answered)'])
    t.frame(frame([chunk('left over')]), 0)
    expect(t.flushAll()).toEqual(['oc #ops: left over'])
  })
})
