import { describe, expect, it } from 'vitest'
import type { PermissionAsk } from '../../src/acp/agent-process.js'
import { autoAllowOption, parsePermissionsMode } from '../../src/acp/auto-allow.js'
import { askingMode, reportedModel } from '../../src/acp/session-calls.js'
import { isKithError } from '../../src/errors.js'

const modes = (...ids: string[]) => ({
  currentModeId: ids.at(-1)!,
  availableModes: ids.map((id) => ({ id, name: id })),
})

describe('askingMode', () => {
  it('prefers default, ask, read-only; never a bypass or plan-only mode', () => {
    expect(askingMode(modes('default', 'acceptEdits', 'plan', 'bypassPermissions'))).toBe('default')
    expect(askingMode(modes('read-only', 'auto', 'full-access'))).toBe('read-only')
    expect(askingMode(modes('yolo', 'autoEdit', 'careful'))).toBe('careful')
    expect(askingMode(modes('bypassPermissions', 'plan', 'dontAsk'))).toBeUndefined()
  })
})

describe('reportedModel', () => {
  it('reads a model config option first, then unstable models', () => {
    expect(
      reportedModel({
        configOptions: [
          { id: 'effort', type: 'select', category: 'thought_level', currentValue: 'high' },
          { id: 'm', type: 'select', category: 'model', currentValue: 'gpt-x' },
        ],
        models: { currentModelId: 'other' },
      }),
    ).toEqual({ value: 'gpt-x', configId: 'm' })
    expect(reportedModel({ models: { currentModelId: 'sonnet' } })).toEqual({ value: 'sonnet' })
    expect(reportedModel({})).toBeUndefined()
  })
})

describe('autoAllowOption', () => {
  const ask = (toolKind: string, kinds = ['allow_always', 'allow_once', 'reject_once']) =>
    ({
      sessionId: 's',
      toolCallId: 't',
      title: 'x',
      toolKind,
      options: kinds.map((kind, i) => ({ optionId: `o${i}`, name: kind, kind })),
    }) satisfies PermissionAsk
  it('chooses allow_once by kind, only where the permissions mode allows the tool kind', () => {
    expect(autoAllowOption('ask', ask('read'))).toBeUndefined()
    expect(autoAllowOption('allow-reads', ask('read'))).toBe('o1')
    expect(autoAllowOption('allow-reads', ask('edit'))).toBeUndefined()
    expect(autoAllowOption('allow-all', ask('execute'))).toBe('o1')
    // No allow_once offered: a person decides.
    expect(autoAllowOption('allow-all', ask('execute', ['allow_always', 'reject_once']))).toBe(
      undefined,
    )
  })
  it('rejects an unknown permissions mode as a usage error', () => {
    let caught: unknown
    try {
      parsePermissionsMode('yolo')
    } catch (err) {
      caught = err
    }
    expect(isKithError(caught, 'usage')).toBe(true)
  })
})
