import { runCli } from './main.js';

process.exitCode = await runCli({
  args: process.argv.slice(2),
  env: process.env,
  stdout: process.stdout,
  stderr: process.stderr,
});
