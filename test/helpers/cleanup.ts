import { onTestFinished } from 'vitest'

/**
 * Where a helper's cleanup goes (stopping a process, removing a temp dir): after the current
 * test, or, while a file's shared fixture is set up (`fileFixture`, in a beforeAll), after the
 * whole file (`endFileFixture`, in its afterAll).
 */
let fileScope: (() => unknown)[] | undefined
const fileCleanups: (() => unknown)[] = []

export function onCleanup(fn: () => unknown): void {
  if (fileScope !== undefined) fileScope.push(fn)
  else onTestFinished(async () => void (await fn()))
}

/** Runs `setup` (in a beforeAll) with every cleanup it asks for kept until the file ends. */
export async function fileFixture<T>(setup: () => Promise<T>): Promise<T> {
  fileScope = fileCleanups
  try {
    return await setup()
  } finally {
    fileScope = undefined
  }
}

/** Runs the cleanups `fileFixture` kept, newest first (in an afterAll). */
export async function endFileFixture(): Promise<void> {
  for (const fn of fileCleanups.splice(0).reverse()) await fn()
}
