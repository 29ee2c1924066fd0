/**
 * The caller closed its connection before the answer: an expected event, not a failure of the
 * gateway. Work for the request stops, nothing is billed, and no answer is sent.
 */
export class CallerGone extends Error {
  constructor() {
    super('caller disconnected');
    this.name = 'CallerGone';
  }
}
