// llm-kernel-tuner: the command line. Each command lives in src/cli/<name>.ts and is loaded only when used, so
// `devices` does not pay for LangChain. Errors the user can act on are printed as one message (no stack trace) with
// exit code 1; --debug (or LKT_DEBUG=1) prints the stack too.
import { commands, usage } from './cli/commands';
import { reportError } from './cli/errors';

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage());
    return name === undefined ? 1 : 0;
  }
  if (name === '--version' || name === '-V') {
    process.stdout.write(`${require('../package.json').version}\n`);
    return 0;
  }
  const command = commands[name];
  if (!command) {
    process.stderr.write(`llm-kernel-tuner: unknown command '${name}'\n\n${usage()}`);
    return 1;
  }
  const loaded = await command.load();
  const code = await loaded.run(rest);
  if (loaded.exitWhenDone) exitWhenWritten = true;
  return code;
}

/** Set by a command that may exit before its workers have shut down (CliCommand.exitWhenDone). */
let exitWhenWritten = false;

/** Exits once stdout and stderr have written what they hold (a pipe writes asynchronously). */
function exitOnceFlushed(): void {
  process.stdout.write('', () => process.stderr.write('', () => process.exit()));
}

const debug = process.argv.includes('--debug') || process.env.LKT_DEBUG === '1';
main(process.argv.slice(2).filter((a) => a !== '--debug')).then(
  (code) => {
    process.exitCode = code;
    if (exitWhenWritten) exitOnceFlushed();
  },
  (e: unknown) => {
    process.exitCode = reportError(e, debug);
  },
);
