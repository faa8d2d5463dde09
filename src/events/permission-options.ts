/**
 * Which of a card's options a person's plain word means (kith-agents, "Answering a card"). One
 * rule for every surface (notifications and their service worker, the web app, `kith chat`'s
 * /allow, `kith permit`): "Allow" is the `allow_once` option, whatever order the agent lists its
 * options in; "Always allow" (`allow_always`) is only ever chosen by its own, explicit word. An
 * option is chosen by its ACP kind, never by its position or a guessed id.
 */

export interface CardOption {
  optionId: string
  name: string
  /** ACP kind: allow_once, allow_always, reject_once, reject_always. */
  kind: string
}

/** The words a person answers a card with. */
export type AnswerWord = 'allow' | 'always' | 'reject'

export const answerWords: readonly AnswerWord[] = ['allow', 'always', 'reject']

/**
 * The option `word` means: `allow` the allow_once option (none: the card offers no plain
 * Allow), `always` the allow_always option, `reject` reject_once, else reject_always (a refusal
 * never runs anything, so the stronger one is an acceptable stand-in).
 */
export function optionFor<O extends CardOption>(
  options: readonly O[],
  word: AnswerWord,
): O | undefined {
  const of = (kind: string) => options.find((o) => o.kind === kind)
  if (word === 'allow') return of('allow_once')
  if (word === 'always') return of('allow_always')
  return of('reject_once') ?? of('reject_always')
}

/** How a surface words an option: by its kind, so "always" is always said. */
export function optionLabel(option: CardOption): string {
  switch (option.kind) {
    case 'allow_once':
      return 'Allow'
    case 'allow_always':
      return 'Always allow'
    case 'reject_once':
      return 'Reject'
    case 'reject_always':
      return 'Always reject'
    default:
      return option.name
  }
}

/** The options in the order a surface shows them: once before always, allow before reject. */
export function optionsInOrder<O extends CardOption>(options: readonly O[]): O[] {
  const rank = (o: CardOption) =>
    ({ allow_once: 0, reject_once: 1, allow_always: 2, reject_always: 3 })[o.kind] ?? 4
  return [...options].sort((a, b) => rank(a) - rank(b))
}
