import { accessSync, constants, statSync } from 'node:fs'
import { delimiter, isAbsolute, join, resolve } from 'node:path'

/**
 * Why `command` (an agent's argv[0]) would not start from `cwd` with this PATH, or undefined
 * when it would: a path must name an executable file; a bare name must be found on PATH, as
 * spawn looks it up. Checked when an agent is added, so a typo shows then and not in chat later.
 */
export function commandProblem(
  command: string,
  cwd: string,
  path = process.env.PATH ?? '',
): string | undefined {
  const executable = (file: string) => {
    try {
      if (!statSync(file).isFile()) return false
      accessSync(file, constants.X_OK)
      return true
    } catch (err) {
      // Missing, unreadable or not executable: all mean it cannot be started.
      if (!(err instanceof Error)) throw err
      return false
    }
  }
  if (command.includes('/')) {
    const file = isAbsolute(command) ? command : resolve(cwd, command)
    return executable(file) ? undefined : `${file} is not an executable file`
  }
  const dirs = path.split(delimiter).filter((d) => d !== '')
  if (dirs.some((d) => executable(join(d, command)))) return undefined
  return `${command} is not on PATH here`
}
