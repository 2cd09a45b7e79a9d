// llm-kernel-tuner auto --strategy evolutionary: budgets and prices on the command line, what it prints of the
// model's use, the replay of a recorded evolutionary session without a model, and a finished session evolved further
// with --resume and a larger budget. The model is the content-answering test double (evolution-responder.ts), the
// GPU the fake backend.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { run } from '../../src/cli/auto';
import { SAXPY, scriptedServers } from '../support/engine-harness';
import { evolutionResponder, saxpyEvolutionTime, TOKENS } from '../support/evolution-responder';
import { FakeBackend } from '../support/fake-backend';
import { sink } from '../support/streams';

const scratch = mkdtempSync(join(tmpdir(), 'lkt-cli-evolve-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
process.env.LKT_SESSIONS_DIR = join(scratch, 'sessions');
const servers = scriptedServers();
afterEach(() => servers.closeAll());

function kernelFile(name: string): string {
  mkdirSync(join(scratch, name), { recursive: true });
  const file = join(scratch, name, 'saxpy.cu');
  writeFileSync(file, SAXPY);
  return file;
}

async function auto(args: string[]) {
  const [stdout, stderr] = [sink(), sink()];
  const code = await run(args, { openBackends: async () => [new FakeBackend({ model: { timeMs: saxpyEvolutionTime } })], stdout, stderr });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

describe('llm-kernel-tuner auto --strategy evolutionary', () => {
  it('evolves within a budget of model calls, prints what the calls cost, replays without a model, and evolves further on --resume', async () => {
    const server = await servers.start([], { responder: evolutionResponder() });
    const file = kernelFile('budget');
    const model = ['--provider', 'openai', '--model', 'scripted-model', '--base-url', `${server.url}/v1`];
    const first = await auto([file, ...model, '--strategy', 'evolutionary', '--seed', '5', '--max-calls', '16', '--price-in', '3', '--price-out', '15', '--retries', '1']);
    expect(first.stderr).not.toMatch(/^error/m);
    expect(first.code).toBe(0);
    const id = /^session (\S+) \(stored in/m.exec(first.stderr)![1]!;
    const [, made, owed] = /evolution stopped: the model-call budget \(16 calls\) is spent: (\d+) calls made and (\d+) owed to children already decided/.exec(first.stderr)!;
    expect(Number(made) + Number(owed) + 1).toBeGreaterThanOrEqual(16);
    const calls = Number(/^model: (\d+) call\(s\)/m.exec(first.stderr)![1]);
    expect(calls).toBeGreaterThanOrEqual(Number(made));
    const perCall = (TOKENS.promptTokens * 3 + TOKENS.completionTokens * 15) / 1e6;
    expect(first.stderr).toContain(`model: ${calls} call(s): ${(calls * TOKENS.promptTokens).toLocaleString('en')} prompt + ${(calls * TOKENS.completionTokens).toLocaleString('en')} completion tokens, $${(calls * perCall).toFixed(4)}`);
    const tuned = readFileSync(join(`${file}.tuned`, 'saxpy.cu'), 'utf8');

    // The recorded session replays with no model (the server is closed) to the same kernel.
    await servers.closeAll();
    const replay = await auto(['--replay', id, '--out', join(scratch, 'replayed')]);
    expect(replay.stderr).not.toMatch(/^error/m);
    expect(replay.code).toBe(0);
    expect(replay.stderr).toMatch(/replay: \d+ model call\(s\) served from the recording/);
    expect(replay.stderr).not.toContain('were not asked for');
    expect(readFileSync(join(scratch, 'replayed', 'saxpy.cu'), 'utf8')).toBe(tuned);

    // A finished evolutionary session goes on with a larger budget: later children, same population.
    const again = await servers.start([], { responder: evolutionResponder() });
    const further = await auto(['--resume', id, '--base-url', `${again.url}/v1`, '--max-calls', '24', '--price-in', '3', '--price-out', '15']);
    expect(further.stderr).not.toMatch(/^error/m);
    expect(further.code).toBe(0);
    expect(further.stderr).toContain(`evolving session ${id} further`);
    expect(further.stderr).toMatch(/evolution stopped: the model-call budget \(24 calls\) is spent/);
    const children = [...further.stderr.matchAll(/^child (\d+) \(step c\d+\)/gm)].map((m) => Number(m[1]));
    expect(children.length).toBeGreaterThan(0);
    const before = [...first.stderr.matchAll(/^child (\d+) \(step c\d+\)/gm)].map((m) => Number(m[1]));
    expect(Math.min(...children)).toBe(Math.max(...before) + 1);
  }, 120_000);

  it('says what is wrong with its flags', async () => {
    const file = kernelFile('flags');
    const model = ['--provider', 'openai', '--model', 'm', '--base-url', 'http://127.0.0.1:9/v1'];
    const cases: [string[], RegExp][] = [
      [['--seed', '3'], /--seed go with --strategy evolutionary/],
      [['--strategy', 'evolutionary', '--window', '0'], /--window must be an integer >= 1, got 0/],
      [['--strategy', 'evolutionary', '--max-cost', '2'], /--max-cost needs the model's prices: --price-in and --price-out/],
      [['--price-in', '3'], /give both --price-in and --price-out/],
      [['--max-calls', '2.5'], /--max-calls must be an integer >= 1, got 2.5/],
      [['--strategy', 'genetic'], /--strategy must be autonomous, explicit or evolutionary, got genetic/],
    ];
    for (const [flags, message] of cases) {
      const r = await auto([file, ...model, ...flags]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(message);
    }
    const replay = await auto(['--replay', 'some-session', '--max-calls', '3']);
    expect(replay.code).toBe(2);
    expect(replay.stderr).toMatch(/a replay asks no model: leave out --max-calls/);
  });
});
