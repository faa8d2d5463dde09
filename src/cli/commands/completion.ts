import { declare, flagsOf, type CommandModule } from '../declare.js'
import type { Out } from '../io.js'

export const completionCommand = declare({
  name: 'completion',
  summary: 'print a shell completion script: kith completion bash|zsh|fish',
  usage: ['kith completion bash|zsh|fish'],
  subcommands: {
    bash: 'for bash: eval "$(kith completion bash)" in ~/.bashrc',
    zsh: 'for zsh: eval "$(kith completion zsh)" in ~/.zshrc (after compinit)',
    fish: 'for fish: kith completion fish > ~/.config/fish/completions/kith.fish',
  },
  arity: { min: 1, max: 1, error: 'kith completion takes one shell: bash, zsh or fish' },
  options: {},
  about: `Prints a completion script for the shell, made from the commands' own declarations: the
commands, their subcommands and their options, each with its summary where the shell shows one.`,
})

/** What completion offers for one command: its words after it, and its flags. */
interface Completable {
  name: string
  summary: string
  words: { word: string; summary: string }[]
  flags: { flag: string; summary: string }[]
}

/** Every command, loaded: handed in by the command index (which lists this command too). */
export type LoadAll = () => Promise<{ name: string; module: CommandModule }[]>

async function completables(loadAll: LoadAll): Promise<Completable[]> {
  const all = await loadAll()
  return [
    ...all.map(({ name, module }) => {
      const decls = [module.command, ...(module.more ?? [])]
      const words = decls.flatMap((d) => [
        ...Object.entries(d.spec.subcommands ?? {}).map(([word, summary]) => ({ word, summary })),
        ...(d.spec.words ?? []).map((word) => ({ word, summary: '' })),
      ])
      const flags = new Map<string, string>()
      for (const d of decls) {
        for (const f of flagsOf(d.spec)) if (!flags.has(f.flag)) flags.set(f.flag, f.description)
      }
      return {
        name,
        summary: module.command.spec.summary,
        words: [...new Map(words.map((w) => [w.word, w])).values()],
        flags: [...flags].map(([flag, summary]) => ({ flag, summary })),
      }
    }),
    { name: 'help', summary: "a command's help", words: [], flags: [] },
  ]
}

const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim()

function bash(cs: Completable[]): string {
  const cases = cs
    .map((c) => {
      const words = [...c.words.map((w) => w.word), ...c.flags.map((f) => f.flag)]
      return `    ${c.name}) words="${(c.name === 'help' ? cs.map((x) => x.name) : words).join(' ')}" ;;`
    })
    .join('\n')
  return `# kith completion for bash: eval "$(kith completion bash)"
_kith() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" words=""
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "${cs.map((c) => c.name).join(' ')}" -- "$cur"))
    return
  fi
  case "\${COMP_WORDS[1]}" in
${cases}
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _kith kith
`
}

function zsh(cs: Completable[]): string {
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`
  const item = (word: string, summary: string) =>
    q(`${word.replace(/:/g, '\\:')}${summary === '' ? '' : `:${oneLine(summary)}`}`)
  const cases = cs
    .map((c) => {
      const items =
        c.name === 'help'
          ? cs.map((x) => item(x.name, x.summary))
          : [
              ...c.words.map((w) => item(w.word, w.summary)),
              ...c.flags.map((f) => item(f.flag, f.summary)),
            ]
      return `    ${c.name}) items=(${items.join(' ')}) ;;`
    })
    .join('\n')
  return `#compdef kith
# kith completion for zsh: eval "$(kith completion zsh)" (after compinit)
_kith() {
  local -a items
  if (( CURRENT == 2 )); then
    items=(${cs.map((c) => item(c.name, c.summary)).join(' ')})
    _describe 'kith command' items
    return
  fi
  case $words[2] in
${cases}
  esac
  (( \${#items} )) && _describe 'kith' items || _files
}
compdef _kith kith
`
}

function fish(cs: Completable[]): string {
  const q = (s: string) => `'${oneLine(s).replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`
  const lines = [
    '# kith completion for fish: kith completion fish > ~/.config/fish/completions/kith.fish',
  ]
  lines.push('complete -c kith -f')
  for (const c of cs)
    lines.push(`complete -c kith -n __fish_use_subcommand -a ${c.name} -d ${q(c.summary)}`)
  for (const c of cs) {
    const when = `'__fish_seen_subcommand_from ${c.name}'`
    for (const w of c.words) {
      lines.push(
        `complete -c kith -n ${when} -a ${w.word}${w.summary === '' ? '' : ` -d ${q(w.summary)}`}`,
      )
    }
    for (const f of c.flags) {
      const flag = f.flag.startsWith('--') ? `-l ${f.flag.slice(2)}` : `-s ${f.flag.slice(1)}`
      lines.push(
        `complete -c kith -n ${when} ${flag}${f.summary === '' ? '' : ` -d ${q(f.summary)}`}`,
      )
    }
    if (c.name === 'help') {
      for (const x of cs) lines.push(`complete -c kith -n ${when} -a ${x.name}`)
    }
  }
  return `${lines.join('\n')}\n`
}

export async function runCompletion(argv: string[], out: Out, loadAll: LoadAll): Promise<number> {
  const parsed = completionCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const cs = await completables(loadAll)
  const shell = parsed.positionals[0]
  const script = shell === 'bash' ? bash(cs) : shell === 'zsh' ? zsh(cs) : fish(cs)
  process.stdout.write(script)
  return 0
}
