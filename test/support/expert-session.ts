// The expert session of examples/matmul_naive (answers written by hand as a capable model would give them, recorded in
// expert-session.json) replayed through the whole graph on a backend, with no model: what the GPU tests and the
// benchmarks run on the device.
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { MemorySaver } from '@langchain/langgraph';
import { ReplayChatModel } from '../../src/engine/llm/replay';
import type { TuningEvent } from '../../src/engine/progress/events';
import type { SessionEnd } from '../../src/engine/session/session';
import { transformerOptionsFrom } from '../../src/engine/session/session-options';
import { LLMKernelTransformer, type LLMKernelTransformerOptions } from '../../src/engine/session/transformer';
import { HistoryEntrySchema } from '../../src/engine/store/history-store';
import type { TuningBackend } from '../../src/tuner/run/backend';

export interface ExpertReplay {
  events: TuningEvent[];
  end: SessionEnd;
  /** The recorded answers it was served, and which it never asked for. */
  replay: ReplayChatModel;
}

/** Replays the recording of the repository at `root` on `backend`, the session's options changed by `overrides`. */
export async function replayExpertSession(root: string, backend: TuningBackend, threadId: string, overrides: Partial<LLMKernelTransformerOptions> = {}): Promise<ExpertReplay> {
  const entry = HistoryEntrySchema.parse(JSON.parse(readFileSync(path.join(root, 'examples', 'matmul_naive', 'expert-session.json'), 'utf8')));
  const replay = new ReplayChatModel(entry.llmExchanges!);
  const { options } = transformerOptionsFrom(entry.run!, { llm: replay, backend, checkpointer: new MemorySaver(), threadId });
  const events: TuningEvent[] = [];
  const stream = new LLMKernelTransformer(entry.originalCode, { ...options, ...overrides }).stream();
  let next = await stream.next();
  for (; !next.done; next = await stream.next()) events.push(next.value);
  return { events, end: next.value, replay };
}
