import { runCli } from './main.js';

// The first Ctrl-C lets a client command cancel what it started; a second one ends the process.
// The operator commands keep Node's own Ctrl-C.
const interrupt = new AbortController();
if (process.argv[2] === 'generate' || process.argv[2] === 'tasks')
  process.once('SIGINT', () => interrupt.abort());

process.exitCode = await runCli({
  args: process.argv.slice(2),
  env: process.env,
  stdout: process.stdout,
  stderr: process.stderr,
  interrupt: interrupt.signal,
});
