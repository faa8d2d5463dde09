import { describe, expect, it } from 'vitest'
import { replyText } from '../../src/node/agent-voice.js'
import { withoutMention } from '../../src/node/agent-prompts.js'

// The bridge's pure parts, directly: how a turn's outcome is worded as the agent's reply (by its
// failure code, not by matching the message), and how a prompt loses its @mention.

describe('replyText', () => {
  it('an answer is the agent text itself', () => {
    expect(replyText('bot', { ok: true, text: 'done' })).toBe('done')
  })

  it('a cancelled turn (by its code) is a stop, not a failure, and keeps what was said', () => {
    expect(replyText('bot', { ok: false, reason: 'cancelled', message: 'turn cancelled' })).toBe(
      '⏹ bot: turn cancelled',
    )
    expect(
      replyText('bot', {
        ok: false,
        reason: 'cancelled',
        message: 'turn cancelled (the agent was stopped)',
        partial: 'half of it\n',
      }),
    ).toBe(
      'half of it\n\n⏹ bot: turn cancelled (the agent was stopped) (what it said before is above)',
    )
  })

  it('any other code is a failure, whatever its words', () => {
    // Words that look like a cancel do not make one: only the code does.
    expect(
      replyText('bot', { ok: false, reason: 'error', message: 'turn cancelled by magic' }),
    ).toBe('⚠ bot did not answer: turn cancelled by magic')
    expect(
      replyText('bot', {
        ok: false,
        reason: 'timeout',
        message: 'timed out: no output from the agent for 900 s',
        partial: 'started',
      }),
    ).toBe('started\n\n⚠ bot did not finish: timed out: no output from the agent for 900 s')
  })
})

describe('withoutMention', () => {
  it('drops plain and person-qualified mentions of the agent, and only those', () => {
    expect(withoutMention('@bot fix it', 'bot')).toBe('fix it')
    expect(withoutMention('@alice/bot fix it, @bot', 'bot')).toBe('fix it,')
    expect(withoutMention('@bottle and @bot-2 stay', 'bot')).toBe('@bottle and @bot-2 stay')
  })
})
