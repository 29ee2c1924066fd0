import type { FastifyInstance, FastifyReply } from 'fastify';
import { type GatePass, NO_SLOT, type RequestGate } from '../../admission/admission.js';
import { finishHook } from './finish-hook.js';
import { whenClosed } from '../when-closed.js';

/**
 * Rate and concurrency limits in `onRequest`, after authentication and before the body is read:
 * a caller over its limits is refused without uploading anything. A concurrency slot is held
 * until the connection's answer is over, whatever its end. A token known to have no limits passes
 * in the same turn.
 */
export function addGateHooks(scope: FastifyInstance, gate: RequestGate): void {
  scope.addHook('onRequest', (request, reply, done) => {
    const { principal } = request;
    if (principal === undefined) return done();
    finishHook(
      () => gate.pass(principal),
      (pass) => {
        // Set now, so that every answer carries them, a refusal further on included.
        if (pass.headers !== NO_SLOT.headers) void reply.headers(pass.headers);
        holdUntilClosed(reply, pass);
      },
      done,
    );
  });
}

function holdUntilClosed(reply: FastifyReply, pass: GatePass): void {
  if (pass !== NO_SLOT) whenClosed(reply, () => void pass.release());
}
