import { describe, expect, it } from 'vitest'
import { MessageDraft, pasteEnd, pasteStart } from '../../src/cli/chat-input.js'

describe('lines gathered into messages', () => {
  it('sends a plain line at once', () => {
    expect(new MessageDraft().line('hello')).toEqual({ send: 'hello', waiting: 0 })
    expect(new MessageDraft().line('   ')).toEqual({ waiting: 0 })
  })

  it('keeps a paste (markers in the text) as one message, sent by its last line', () => {
    const d = new MessageDraft()
    expect(d.line(`${pasteStart}line one`)).toEqual({ waiting: 1 })
    expect(d.line('  line two')).toEqual({ waiting: 2 })
    expect(d.line(`line three${pasteEnd}`)).toEqual({
      send: 'line one\n  line two\nline three',
      waiting: 0,
    })
    expect(d.waiting).toBe(0)
  })

  it('on a terminal, lines during a paste wait for the Enter that follows it', () => {
    const d = new MessageDraft()
    expect(d.line('a', true)).toEqual({ waiting: 1 })
    expect(d.line('b', true)).toEqual({ waiting: 2 })
    // The paste's last line, edited and sent with Enter.
    expect(d.line('c and more')).toEqual({ send: 'a\nb\nc and more', waiting: 0 })
    // A paste that ended with a newline: Enter on an empty line sends it.
    d.line('x', true)
    expect(d.line('')).toEqual({ send: 'x', waiting: 0 })
  })

  it('goes on after a trailing backslash, and /drop clears what was gathered', () => {
    const d = new MessageDraft()
    expect(d.line('first \\')).toEqual({ waiting: 1 })
    expect(d.line('second')).toEqual({ send: 'first \nsecond', waiting: 0 })
    d.line('gathered \\')
    expect(d.clear()).toBe(1)
    expect(d.line('fresh')).toEqual({ send: 'fresh', waiting: 0 })
    // An escaped backslash at the end is text.
    expect(new MessageDraft().line('path C:\\\\')).toEqual({ send: 'path C:\\\\', waiting: 0 })
  })
})
