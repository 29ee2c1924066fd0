import type { Engine, EngineImage, EngineJob, EngineRun } from '../engine.js';

/** A turn to run one job. */
export interface EngineTurn<Image extends EngineImage> {
  /**
   * Runs `job` in this turn and gives the turn back when the run ends, however it ends (finished,
   * failed, or stopped by `return()` after its first step); call it once, and step it at once.
   */
  generate(job: EngineJob): EngineRun<Image>;
}

/**
 * An engine whose jobs wait for a turn in the gateway's own queue before they run, so that the
 * time spent waiting can be told apart from the time spent working.
 */
export interface TurnTakingEngine<Image extends EngineImage> extends Engine<Image> {
  /**
   * A turn, once one is free. Rejects at once with 503 Overloaded when the queue is full, and
   * with the signal's reason if it aborts first.
   */
  waitForTurn(signal: AbortSignal): Promise<EngineTurn<Image>>;
}

export function takesTurns<Image extends EngineImage>(
  engine: Engine<Image>,
): engine is TurnTakingEngine<Image> {
  return typeof (engine as Partial<TurnTakingEngine<Image>>).waitForTurn === 'function';
}
