// Records the events of a scripted autonomous session (the unit tests' scripted model over HTTP, the fake GPU backend
// with stated limits) for the graph view's screenshot: node session-events.json OUT.json. No GPU, no real model.
import { readFileSync, writeFileSync } from 'node:fs';
import { defaultRetryPolicy } from '../../src/engine/candidate/feedback';
import { AutonomousTuningStrategy } from '../../src/engine/strategies/autonomous';
import { LLMKernelTransformer } from '../../src/engine/session/transformer';
import { collect, openaiModel, SAXPY, saxpyTime, serve } from '../../test/support/engine-harness';
import { FakeBackend } from '../../test/support/fake-backend';
import type { ScriptTurn } from '../../test/support/scripted-llm-server';

async function main(out: string): Promise<void> {
  // Run from the repository's root: the bundle is elsewhere, so the script is read from there.
  const script = JSON.parse(readFileSync('test/fixtures/llm-scripts/autonomous-session.json', 'utf8')) as { turns: ScriptTurn[] };
  const server = await serve(script.turns);
  try {
    const backend = new FakeBackend({ model: { timeMs: saxpyTime } });
    const run = await collect(new LLMKernelTransformer(SAXPY, { llm: openaiModel(server), backend, tuningStrategy: new AutonomousTuningStrategy({ retryPolicy: defaultRetryPolicy(1) }) }));
    if (run.end.status !== 'finished') throw new Error(`the scripted session ended ${run.end.status}`);
    writeFileSync(out, JSON.stringify(run.events));
  } finally {
    await server.close();
  }
}

main(process.argv[2] ?? 'session-events.json').catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
