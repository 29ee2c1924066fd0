import type { Engine, EngineOutput, PngImage } from '../../engine/engine.js';
import { type EngineTurn, takesTurns } from '../../engine/local/engine-turns.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { asAbortSignal } from '../../support/cancellation.js';
import {
  type AttemptCall,
  type AttemptResult,
  type AttemptRun,
  type ChannelAdapter,
  failure,
} from '../attempt-result.js';

/**
 * The built-in renderer as a channel: no network, so nothing is ever half-sent or billed twice.
 * Its jobs wait for a turn in the gateway first, off the attempt's clock: a full queue, or a
 * request whose time runs out while it waits, is `overloaded`, never the channel's failure.
 */
export class LocalAdapter implements ChannelAdapter {
  constructor(private readonly engine: Engine<PngImage>) {}

  /** Yields each image as the engine renders it; a local image needs no re-hosting. */
  async *attempt(call: AttemptCall): AttemptRun {
    // The engine's worker pool wants a real AbortSignal; only this channel pays for one.
    const signal = asAbortSignal(call.signal);
    let turn: EngineTurn<PngImage>;
    try {
      turn = await this.waitForTurn(call, signal);
    } catch (error) {
      return noTurn(error, call);
    }
    try {
      return rendered(yield* turn.generate(Object.assign({}, call.job, { signal })));
    } catch (error) {
      return renderFailed(error, call);
    }
  }

  private waitForTurn(call: AttemptCall, signal: AbortSignal): Promise<EngineTurn<PngImage>> {
    const engine = this.engine;
    if (!takesTurns(engine)) return Promise.resolve({ generate: (job) => engine.generate(job) });
    return call.waitOffTheClock(() => engine.waitForTurn(signal));
  }
}

function rendered(output: EngineOutput<PngImage>): AttemptResult {
  return {
    ok: true,
    output: {
      images: output.images,
      width: output.width,
      height: output.height,
      ...(output.tokens === undefined ? {} : { tokens: output.tokens }),
    },
  };
}

function noTurn(error: unknown, call: AttemptCall): AttemptResult {
  if (call.callerGone()) return failure('caller-gone', 'caller disconnected');
  if (error instanceof GatewayError && error.code === 'Overloaded') {
    const retryAfterMs = retryAfterMsOf(error);
    return failure('overloaded', error.message, retryAfterMs === undefined ? {} : { retryAfterMs });
  }
  if (call.signal.aborted)
    return failure(
      'overloaded',
      'the request ran out of time waiting for a turn in the local engine',
    );
  throw error;
}

function renderFailed(error: unknown, call: AttemptCall): AttemptResult {
  if (call.callerGone()) return failure('caller-gone', 'caller disconnected');
  if (call.signal.aborted) return failure('timeout', 'timed out');
  if (error instanceof GatewayError && error.status < 500)
    return failure('rejected', `request refused (${error.code})`, { callerError: error });
  if (error instanceof GatewayError)
    return failure('server-error', `local engine: ${error.code} ${error.message}`);
  // Anything else is a bug in the renderer: a 500 with its stack in the log, not a failover.
  throw error;
}

function retryAfterMsOf(error: GatewayError): number | undefined {
  const seconds = Number(error.headers['Retry-After'] ?? error.headers['retry-after']);
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : undefined;
}
