/** The user pressed Ctrl-C (SIGINT): the command stopped what it had started; exit code 130. */
export class Interrupted extends Error {
  constructor() {
    super('interrupted');
    this.name = 'Interrupted';
  }
}
