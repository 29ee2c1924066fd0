import type { Engine, PngImage } from '../../engine/engine.js';
import { GatewayError } from '../../errors/gateway-error.js';
import {
  type AttemptCall,
  type AttemptResult,
  type ChannelAdapter,
  failure,
} from '../attempt-result.js';

/** The built-in renderer as a channel: no network, so nothing is ever half-sent or billed twice. */
export class LocalAdapter implements ChannelAdapter {
  constructor(private readonly engine: Engine<PngImage>) {}

  async attempt(call: AttemptCall): Promise<AttemptResult> {
    try {
      const output = await this.engine.generate({ ...call.job, signal: call.signal });
      return {
        ok: true,
        output: {
          images: output.images,
          width: output.width,
          height: output.height,
          ...(output.tokens === undefined ? {} : { tokens: output.tokens }),
        },
      };
    } catch (error) {
      if (call.callerGone()) return failure('caller-gone', 'caller disconnected');
      if (call.signal.aborted) return failure('timeout', 'timed out');
      if (error instanceof GatewayError && error.status < 500)
        return failure('rejected', `request refused (${error.code})`, { callerError: error });
      if (error instanceof GatewayError)
        return failure('server-error', `local engine: ${error.code} ${error.message}`);
      // Anything else is a bug in the renderer: a 500 with its stack in the log, not a failover.
      throw error;
    }
  }
}
