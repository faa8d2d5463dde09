import type { IntakeBatch } from './batch.js'
import type { IntakeContext } from './context.js'
import { admit } from './admit.js'
import { dedupe } from './dedupe.js'
import { enforce } from './enforce.js'
import { handOff } from './hand-off.js'
import { keep } from './keep.js'
import { open } from './open.js'
import { republish } from './republish.js'
import { verify } from './verify.js'
import { waitForOrder } from './wait-for-order.js'

/** One step of intake: reads and writes the batch; false ends the batch (nothing left to do). */
export interface IntakeStage {
  readonly name: string
  run(batch: IntakeBatch, ctx: IntakeContext): boolean | Promise<boolean>
}

/**
 * Events from hubs, stage by stage (docs/ARCHITECTURE.md names them in this order). Refused and
 * forged events are counted in the log, never stored or shown.
 */
export const intakeStages: readonly IntakeStage[] = [
  { name: 'dedupe', run: dedupe },
  { name: 'verify', run: verify },
  { name: 'wait for order', run: waitForOrder },
  { name: 'admit', run: admit },
  { name: 'open', run: open },
  { name: 'keep', run: keep },
  { name: 'republish', run: republish },
  { name: 'enforce', run: enforce },
  { name: 'hand off', run: handOff },
]

/**
 * Runs a batch through the stages until one ends it. Only the stages that wait (verify, wait for
 * order) are awaited: from admission to the hand-off a batch is applied in one go, as before,
 * with nothing else of the node running in between.
 */
export async function runIntake(batch: IntakeBatch, ctx: IntakeContext): Promise<void> {
  for (const stage of intakeStages) {
    const result = stage.run(batch, ctx)
    if (!(result instanceof Promise ? await result : result)) return
  }
}
