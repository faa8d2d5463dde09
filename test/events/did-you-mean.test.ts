import { describe, expect, it } from 'vitest'
import { didYouMean, editDistance } from '../../src/events/did-you-mean.js'

describe('did you mean', () => {
  it('finds the near names, closest first, and nothing for a name far from all', () => {
    expect(didYouMean('codx', ['codex', 'claude', 'gemini'])).toEqual(['codex'])
    expect(didYouMean('osp', ['ops', 'dev', 'general'])).toEqual(['ops'])
    expect(didYouMean('ops2', ['ops', 'dev'])).toEqual(['ops'])
    expect(didYouMean('xyz', ['ops', 'dev', 'general'])).toEqual([])
    expect(didYouMean('CLAUD', ['claude', 'cloud'])).toEqual(['claude', 'cloud'])
    // The name itself is no suggestion.
    expect(didYouMean('ops', ['ops'])).toEqual([])
  })

  it('counts a swap of neighbours as one edit', () => {
    expect(editDistance('osp', 'ops')).toBe(1)
    expect(editDistance('kitten', 'sitting')).toBe(3)
    expect(editDistance('', 'abc')).toBe(3)
  })
})
