import type { FastifyInstance, FastifyReply } from 'fastify';
import { type GatePass, NO_SLOT, type RequestGate } from '../admission/admission.js';

/**
 * Rate and concurrency limits in `onRequest`, after authentication and before the body is read:
 * a caller over its limits is refused without uploading anything. A concurrency slot is held
 * until the connection's answer is over, whatever its end. A token known to have no limits passes
 * in the same turn.
 */
export function gateRequests(scope: FastifyInstance, gate: RequestGate): void {
  scope.addHook('onRequest', (request, reply, done) => {
    const { principal, account } = request;
    if (principal === undefined || account === undefined) return done();
    let pass;
    try {
      pass = gate.pass(principal, account);
    } catch (error) {
      return done(error as Error);
    }
    if (!(pass instanceof Promise)) {
      holdUntilClosed(reply, pass);
      return done();
    }
    pass.then((held) => {
      holdUntilClosed(reply, held);
      done();
    }, done);
  });
}

function holdUntilClosed(reply: FastifyReply, pass: GatePass): void {
  if (pass !== NO_SLOT) reply.raw.once('close', () => void pass.release());
}
