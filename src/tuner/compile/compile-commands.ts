// The flags a project's own build gives a .cu file, read from its compile_commands.json (CMake's
// CMAKE_EXPORT_COMPILE_COMMANDS, Bear, ...): include directories and defines, so a file that includes project headers
// from elsewhere in the tree, or depends on `-DENABLE_BF16`, compiles for the tuner as it does in the user's build.
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

export interface BuildFlags {
  /** The compile_commands.json the flags came from. */
  source: string;
  /** -I and -isystem directories (absolute). */
  includePaths: string[];
  /** -D and -U options, and the language options that change what device code means (-std, --expt-*), as given. */
  options: string[];
}

interface Entry {
  directory: string;
  file: string;
  command?: string;
  arguments?: string[];
}

/** Where compile_commands.json usually is: the directory, or its build/ folder, of the file and each of its ancestors. */
function candidates(file: string, stopAt?: string): string[] {
  const out: string[] = [];
  let dir = path.dirname(path.resolve(file));
  for (;;) {
    out.push(path.join(dir, 'compile_commands.json'), path.join(dir, 'build', 'compile_commands.json'));
    if ((stopAt && path.resolve(stopAt) === dir) || path.dirname(dir) === dir) return out;
    dir = path.dirname(dir);
  }
}

/** Splits a shell command line (quotes and backslashes as a POSIX shell reads them). */
export function splitCommand(command: string): string[] {
  const args: string[] = [];
  let current = '';
  let quote: '"' | "'" | null = null;
  let started = false;
  for (let i = 0; i < command.length; i++) {
    const c = command[i]!;
    if (quote) {
      if (c === quote) quote = null;
      else if (c === '\\' && quote === '"' && i + 1 < command.length) current += command[++i];
      else current += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      started = true;
    } else if (c === '\\' && i + 1 < command.length) {
      current += command[++i];
      started = true;
    } else if (/\s/.test(c)) {
      if (started) args.push(current);
      current = '';
      started = false;
    } else {
      current += c;
      started = true;
    }
  }
  if (started) args.push(current);
  return args;
}

/** The include paths and defines of one compile command (relative paths against its directory). */
export function flagsOf(args: readonly string[], directory: string): { includePaths: string[]; options: string[] } {
  const includePaths: string[] = [];
  const options: string[] = [];
  const take = (i: number, flag: string): [string | undefined, number] => {
    const arg = args[i]!;
    if (arg === flag) return [args[i + 1], i + 1];
    if (arg.startsWith(`${flag}=`)) return [arg.slice(flag.length + 1), i];
    return [arg.slice(flag.length), i];
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const include = ['-isystem', '--include-path', '-I'].find((f) => arg.startsWith(f));
    const define = ['--define-macro', '-D'].find((f) => arg.startsWith(f));
    const undefine = ['--undefine-macro', '-U'].find((f) => arg.startsWith(f));
    const flag = include ?? define ?? undefine;
    if (flag) {
      const [value, next] = take(i, flag);
      i = next;
      if (!value) continue;
      if (include) includePaths.push(path.resolve(directory, value));
      else options.push(`${define ? '-D' : '-U'}${value}`);
    } else if (/^--?std=/.test(arg)) {
      options.push(arg.replace(/^--std=/, '-std='));
    } else if (/^--?expt-(relaxed-constexpr|extended-lambda)$/.test(arg)) {
      options.push(arg.replace(/^-+/, '--'));
    }
  }
  return { includePaths: [...new Set(includePaths)], options };
}

/**
 * The build flags of `file` from the nearest compile_commands.json that lists it (looking up from the file's directory
 * to `stopAt`, the workspace root), or undefined when there is none.
 */
export function buildFlagsFor(file: string, stopAt?: string): BuildFlags | undefined {
  const target = path.resolve(file);
  for (const candidate of candidates(target, stopAt)) {
    if (!existsSync(candidate)) continue;
    let entries: Entry[];
    try {
      entries = JSON.parse(readFileSync(candidate, 'utf8')) as Entry[];
    } catch {
      continue; // a half-written or broken database: not ours to judge
    }
    if (!Array.isArray(entries)) continue;
    const entry = entries.find((e) => e && typeof e.file === 'string' && path.resolve(e.directory ?? '', e.file) === target);
    if (!entry) continue;
    const args = entry.arguments ?? splitCommand(entry.command ?? '');
    return { source: candidate, ...flagsOf(args.slice(1), entry.directory ?? path.dirname(candidate)) };
  }
  return undefined;
}
