import { describe, expect, it } from 'vitest'
import { ReplyText } from '../../src/acp/reply-text.js'

const msg = (text: string) => ({
  sessionUpdate: 'agent_message_chunk',
  content: { type: 'text', text },
})

describe("a turn's reply from its updates", () => {
  it('joins streamed chunks as they came', () => {
    const r = new ReplyText()
    for (const t of ['chunk 1 ', 'chunk 2 ', 'chunk 3']) r.add(msg(t))
    expect(r.text).toBe('chunk 1 chunk 2 chunk 3')
  })

  it('sets apart what was said before and after a tool call, and a warning before the answer', () => {
    const r = new ReplyText()
    r.add(msg('Let me check.'))
    r.add({ sessionUpdate: 'tool_call', toolCallId: 't', title: 'npm test' })
    r.add(msg('All green.'))
    expect(r.text).toBe('Let me check.\n\nAll green.')
    const w = new ReplyText()
    w.add(msg('⚠ Model metadata for `mock-model` not found.'))
    w.add(msg('The build'))
    w.add(msg(' is green.'))
    expect(w.text).toBe('⚠ Model metadata for `mock-model` not found.\n\nThe build is green.')
    const glued = new ReplyText()
    glued.add(msg('Model metadata for `mock-model` not found. Defaulting to fallback metadata.'))
    glued.add(msg('The build'))
    glued.add(msg(' is green.'))
    expect(glued.text).toBe(
      'Model metadata for `mock-model` not found. Defaulting to fallback metadata.\n\nThe build is green.',
    )
    // A model streaming sentences with their spaces runs on as one paragraph.
    const prose = new ReplyText()
    for (const t of ['It works.', ' The build', ' is green.']) prose.add(msg(t))
    expect(prose.text).toBe('It works. The build is green.')
  })

  it('ignores what is not text, and is empty before anything was said', () => {
    const r = new ReplyText()
    expect(r.text).toBe('')
    r.add({ sessionUpdate: 'agent_message_chunk', content: { type: 'image', data: 'x' } })
    r.add({ sessionUpdate: 'plan', entries: [] })
    expect(r.text).toBe('')
  })
})
