import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import type { NostrEvent } from '../../src/events/event.js'
import {
  optionFor,
  optionLabel,
  optionsInOrder,
  type CardOption,
} from '../../src/events/permission-options.js'
import { parsePermissionRequest } from '../../src/events/permission-request.js'
import { classify, type ClassifyContext } from '../../src/notify/classify.js'

const vectors = JSON.parse(
  readFileSync(new URL('../vectors/agent-events.json', import.meta.url), 'utf8'),
) as { make: { request: { spec: { options: CardOption[] }; expect: NostrEvent } } }

/** The project's own card vector: claude-agent-acp's order, allow_always listed first. */
const card = vectors.make.request.expect
const options = vectors.make.request.spec.options

describe('which option a word means (one rule for every surface)', () => {
  it('the vector lists allow_always first, as claude-agent-acp does', () => {
    expect(options[0]!.kind).toBe('allow_always')
  })

  it('"allow" is the allow_once option, never allow_always', () => {
    expect(optionFor(options, 'allow')).toMatchObject({ optionId: 'allow', kind: 'allow_once' })
    expect(optionFor(options, 'always')).toMatchObject({ optionId: 'always' })
    expect(optionFor(options, 'reject')).toMatchObject({ optionId: 'reject' })
  })

  it('a card with no allow_once offers no plain Allow; reject falls back to reject_always', () => {
    const only: CardOption[] = [
      { optionId: 'a', name: 'Yes, always', kind: 'allow_always' },
      { optionId: 'r', name: 'No, never', kind: 'reject_always' },
    ]
    expect(optionFor(only, 'allow')).toBeUndefined()
    expect(optionFor(only, 'always')?.optionId).toBe('a')
    expect(optionFor(only, 'reject')?.optionId).toBe('r')
  })

  it('shows once before always and says "always" in the label', () => {
    expect(optionsInOrder(options).map((o) => o.kind)).toEqual([
      'allow_once',
      'reject_once',
      'allow_always',
    ])
    expect(optionsInOrder(options).map(optionLabel)).toEqual(['Allow', 'Reject', 'Always allow'])
  })

  it("a notification's Allow (what the service worker signs) is the once option", () => {
    const parsed = parsePermissionRequest(card)
    const ctx: ClassifyContext = {
      person: parsed.prompter,
      personOf: (k) => k,
      // The card is signed by the agent that asks (card.request is the agent's own).
      isAgent: (k) => k === parsed.agent,
      nameOf: () => 'bot',
      event: () => undefined,
      fleet: parsed.fleet!,
      now: () => parsed.expires - 100,
    }
    const notice = classify(card, ctx)
    expect(notice?.payload.card).toMatchObject({ allow: 'allow', reject: 'reject' })
  })
})
