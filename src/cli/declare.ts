import { parseArgs } from 'node:util'
import { KithError } from '../errors.js'
import { didYouMean } from '../events/did-you-mean.js'
import type { Out } from './io.js'

/**
 * One declaration per command: its name, summary, usage, options and prose. The help text, the
 * `node:util` parseArgs config, the unknown-option error and the shell completion all come from
 * it, so help and parser cannot drift apart (`kith fleet` once accepted a `--rearm` its help
 * never named).
 */
export interface OptionSpec {
  readonly type: 'boolean' | 'string'
  readonly short?: string
  /** The value's placeholder in help (`--name NAME`); string options only. */
  readonly value?: string
  readonly description: string
  /** May be given more than once; the values come back as an array. */
  readonly multiple?: boolean
}

export type OptionSpecs = Readonly<Record<string, OptionSpec>>

export interface CommandSpec<O extends OptionSpecs> {
  /** `status`, or `agent logs` for a subcommand with its own declaration. */
  readonly name: string
  /** One line, shown in `kith help` and offered by shell completion. */
  readonly summary: string
  /** Usage lines without the leading `Usage:`; a line may carry an indented explanation. */
  readonly usage: readonly string[]
  /** Subcommands by name with their summary, for completion (`kith agent <TAB>`). */
  readonly subcommands?: Readonly<Record<string, string>>
  /** How many positionals it takes; outside this, `arity.error` and the usage line. */
  readonly arity?: { readonly min: number; readonly max: number; readonly error: string }
  readonly options: O
  /** The prose after the usage: what the command does, what it needs. */
  readonly about?: string
  /** Further words completion offers after the command (`kith hub add`). */
  readonly words?: readonly string[]
}

type ValueOf<S extends OptionSpec> = S['type'] extends 'boolean'
  ? S['multiple'] extends true
    ? boolean[]
    : boolean
  : S['multiple'] extends true
    ? string[]
    : string

export type Values<O extends OptionSpecs> = { -readonly [K in keyof O]?: ValueOf<O[K]> }

export interface Parsed<O extends OptionSpecs> {
  readonly values: Values<O>
  readonly positionals: string[]
}

export interface Command<O extends OptionSpecs> {
  readonly spec: CommandSpec<O>
  /** The full help text: usage, prose, options. */
  help(): string
  /**
   * Parses argv. When there is nothing to run it gives the exit code to return: `--help`/`-h`
   * prints the help (0), as does a command with subcommands given none (2). An unknown option,
   * an unknown subcommand or a wrong number of positionals throws a usage error.
   */
  parse(argv: readonly string[], out: Pick<Out, 'line'>): Parsed<O> | number
}

/** A command as main runs it: its declaration and what runs it. */
export interface CommandModule {
  readonly command: Command<OptionSpecs>
  /** More declarations under the same word (`kith hub add`), for help and completion. */
  readonly more?: readonly Command<OptionSpecs>[]
  run(argv: string[], out: Out): Promise<number> | number
}

const helpOption: OptionSpec = { type: 'boolean', short: 'h', description: 'this help' }

export function declare<const O extends OptionSpecs>(spec: CommandSpec<O>): Command<O> {
  const all: OptionSpecs = { ...spec.options, help: helpOption }
  const config = Object.fromEntries(
    Object.entries(all).map(([name, o]) => [
      name,
      {
        type: o.type,
        ...(o.short === undefined ? {} : { short: o.short }),
        ...(o.multiple ? { multiple: true } : {}),
      },
    ]),
  )
  const usageLine = () =>
    spec.usage.length === 1 ? `Usage: ${spec.usage[0]}` : `Usage:\n${indent(spec.usage)}`
  const help = () => helpText(spec, all, usageLine())
  return {
    spec,
    help,
    parse(argv, out) {
      let parsed: { values: Record<string, unknown>; positionals: string[] }
      try {
        parsed = parseArgs({
          args: [...argv],
          options: config,
          strict: true,
          allowPositionals: true,
        })
      } catch (cause) {
        throw usageError(spec.name, all, cause, usageLine())
      }
      if (parsed.values.help === true) {
        out.line(help())
        return 0
      }
      const subs = spec.subcommands
      const sub = parsed.positionals[0]
      if (subs !== undefined && sub === undefined) {
        out.line(help())
        return 2
      }
      if (subs !== undefined && sub !== undefined && !Object.hasOwn(subs, sub)) {
        const near = didYouMean(sub, Object.keys(subs), 1)[0]
        const hint = near === undefined ? '' : ` (did you mean kith ${spec.name} ${near}?)`
        throw new KithError(
          'usage',
          `unknown ${spec.name} command ${JSON.stringify(sub)}${hint}\n\n${help()}`,
        )
      }
      const n = parsed.positionals.length
      if (spec.arity !== undefined && (n < spec.arity.min || n > spec.arity.max)) {
        throw new KithError('usage', `${spec.arity.error}\n\n${help()}`)
      }
      return { values: parsed.values as Values<O>, positionals: parsed.positionals }
    },
  }
}

function indent(lines: readonly string[]): string {
  return lines.map((l) => `  ${l}`).join('\n')
}

function flagOf(name: string, o: OptionSpec): string {
  const value = o.type === 'string' ? ` ${o.value ?? 'VALUE'}` : ''
  return `${o.short === undefined ? '    ' : `-${o.short}, `}--${name}${value}`
}

function helpText(spec: CommandSpec<OptionSpecs>, all: OptionSpecs, usage: string): string {
  const flags = Object.entries(all).map(([name, o]) => ({
    flag: flagOf(name, o),
    text: `${o.description}${o.multiple ? ' (may be repeated)' : ''}`,
  }))
  const width = Math.min(24, Math.max(...flags.map((f) => f.flag.length)) + 2)
  const hang = `\n  ${' '.repeat(width)}`
  const options = flags.map((f) => {
    const text = wrap(f.text, helpColumns - 2 - width).join(hang)
    return f.flag.length + 2 > width
      ? `  ${f.flag}${hang}${text}`
      : `  ${f.flag.padEnd(width)}${text}`
  })
  const subs = Object.entries(spec.subcommands ?? {})
  return [
    usage,
    ...(spec.about === undefined ? [] : ['', spec.about]),
    ...(subs.length === 0
      ? []
      : ['', 'Commands:', ...subs.map(([n, s]) => `  ${n.padEnd(10)} ${s}`)]),
    '',
    'Options:',
    ...options,
  ].join('\n')
}

/** Help fits an 80-column terminal: option descriptions wrap at word boundaries. */
const helpColumns = 80

function wrap(text: string, columns: number): string[] {
  const lines: string[] = []
  let line = ''
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > columns) {
      lines.push(line)
      line = word
    } else line = line === '' ? word : `${line} ${word}`
  }
  lines.push(line)
  return lines
}

/** parseArgs' own errors as Kith usage errors, with did-you-mean for a misspelt option. */
function usageError(command: string, all: OptionSpecs, cause: unknown, usage: string): KithError {
  const code = (cause as { code?: unknown } | null)?.code
  const message = cause instanceof Error ? cause.message : String(cause)
  const more = `${usage}\n(kith ${command} --help for more)`
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const option = /'([^']+)'/.exec(message)?.[1] ?? message
    const bare = option.replace(/^-+/, '').replace(/=.*$/, '')
    const near = didYouMean(bare, Object.keys(all), 1)[0]
    const hint = near === undefined ? '' : ` (did you mean --${near}?)`
    return new KithError(
      'usage',
      `Unknown option '${option}' for kith ${command}${hint}\n${more}`,
      {
        cause,
      },
    )
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    const option = /'([^']+)'/.exec(message)?.[1]
    const spec = Object.entries(all).find(([n, o]) => option?.includes(`--${n}`) === true && o)
    const what =
      spec === undefined
        ? message.split('.')[0]
        : spec[1].type === 'string'
          ? `--${spec[0]} needs a value (--${spec[0]} ${spec[1].value ?? 'VALUE'})`
          : `--${spec[0]} takes no value`
    return new KithError('usage', `${what}\n${more}`, { cause })
  }
  return new KithError('usage', `${message}\n${more}`, { cause })
}

/** `--name` and `-n` for each option of a command, help included, with its description. */
export function flagsOf(spec: CommandSpec<OptionSpecs>): { flag: string; description: string }[] {
  const all: OptionSpecs = { ...spec.options, help: helpOption }
  return Object.entries(all).flatMap(([name, o]) => [
    { flag: `--${name}`, description: o.description },
    ...(o.short === undefined ? [] : [{ flag: `-${o.short}`, description: o.description }]),
  ])
}
