import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { Annotation, Command, END, INTERRUPT, MessagesAnnotation, START, StateGraph, interrupt, isInterrupted } from '@langchain/langgraph';
import { emptyCheckpoint, uuid6, type CheckpointTuple } from '@langchain/langgraph-checkpoint';
import { promises as fs, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileCheckpointSaver } from '../../src/engine/store/checkpointer.js';

let root: string;
beforeEach(async () => {
  root = await fs.mkdtemp(join(tmpdir(), 'lkt-ckpt-'));
});
afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await fs.readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) out.push(relative(dir, join(entry.parentPath, entry.name)));
  }
  return out.sort();
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

/** A plan-approval graph like the engine's: planner -> review (interrupt) -> apply. Counters show what re-ran. */
function planGraph(runs: Record<string, number>) {
  const State = Annotation.Root({
    plan: Annotation<string[]>({ reducer: (_, b) => b, default: () => [] }),
    approved: Annotation<string[] | undefined>(),
    log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  });
  return new StateGraph(State)
    .addNode('planner', () => {
      runs.planner = (runs.planner ?? 0) + 1;
      return { plan: ['block_size_x', 'shared_memory_input'], log: ['planned'] };
    })
    .addNode('review', (state) => {
      runs.review = (runs.review ?? 0) + 1;
      const edited = interrupt<{ question: string; plan: string[] }, string[]>({ question: 'Approve this plan?', plan: state.plan });
      return { approved: edited, log: ['approved'] };
    })
    .addNode('apply', (state) => {
      runs.apply = (runs.apply ?? 0) + 1;
      return { log: state.approved!.map((s) => `applied ${s}`) };
    })
    .addEdge(START, 'planner')
    .addEdge('planner', 'review')
    .addEdge('review', 'apply')
    .addEdge('apply', END);
}

describe('FileCheckpointSaver with a real LangGraph graph', () => {
  it('interrupts, survives a reload (new saver on the same directory) and resumes with a Command', async () => {
    const runs: Record<string, number> = {};
    const config = { configurable: { thread_id: 'session-1' } };

    const first = planGraph(runs).compile({ checkpointer: new FileCheckpointSaver(root) });
    const interrupted = await first.invoke({}, config);
    if (!isInterrupted(interrupted)) throw new Error('expected the graph to stop at the interrupt');
    expect(interrupted[INTERRUPT]).toHaveLength(1);
    expect(interrupted[INTERRUPT][0]!.value).toEqual({ question: 'Approve this plan?', plan: ['block_size_x', 'shared_memory_input'] });
    expect(runs).toEqual({ planner: 1, review: 1 });

    // "Reload": nothing in memory survives, only the directory.
    const graph = planGraph(runs).compile({ checkpointer: new FileCheckpointSaver(root) });
    const paused = await graph.getState(config);
    expect(paused.next).toEqual(['review']);
    expect(paused.values.plan).toEqual(['block_size_x', 'shared_memory_input']);
    expect(paused.tasks[0]!.interrupts[0]!.value).toMatchObject({ question: 'Approve this plan?' });

    const done = await graph.invoke(new Command({ resume: ['shared_memory_input'] }), config);
    expect(done.log).toEqual(['planned', 'approved', 'applied shared_memory_input']);
    expect(runs).toEqual({ planner: 1, review: 2, apply: 1 }); // the interrupted node re-runs, nothing before it

    const final = await graph.getState(config);
    expect(final.next).toEqual([]);
    expect(final.values.approved).toEqual(['shared_memory_input']);

    const history = await collect(graph.getStateHistory(config));
    expect(history.length).toBeGreaterThanOrEqual(5);
    expect(history[0]!.values).toEqual(final.values);
    expect(history.at(-1)!.metadata?.source).toBe('input');
    const steps = history.map((h) => h.metadata?.step ?? NaN);
    expect(steps).toEqual([...steps].sort((a, b) => b - a));
    // Time travel: the snapshot before approval still knows its pending node.
    expect(history.find((h) => h.next.includes('review'))!.values.plan).toEqual(['block_size_x', 'shared_memory_input']);
  });

  it('resumes an interrupt raised inside a subgraph (its own checkpoint namespace) after a reload', async () => {
    const inner = new StateGraph(MessagesAnnotation)
      .addNode('ask', () => {
        const answer = interrupt<string, string>('which tile size?');
        return { messages: [new AIMessage(`tile=${answer}`)] };
      })
      .addEdge(START, 'ask')
      .addEdge('ask', END)
      .compile();
    const build = (saver: FileCheckpointSaver) =>
      new StateGraph(MessagesAnnotation).addNode('tune', inner).addEdge(START, 'tune').addEdge('tune', END).compile({ checkpointer: saver });
    const config = { configurable: { thread_id: 'nested' } };

    const r1 = await build(new FileCheckpointSaver(root)).invoke({ messages: [new HumanMessage('tune it')] }, config);
    if (!isInterrupted(r1)) throw new Error('expected the graph to stop at the interrupt');
    expect(r1[INTERRUPT][0]!.value).toBe('which tile size?');
    const namespaces = (await fs.readdir(join(root, 't-nested'))).sort();
    expect(namespaces.length).toBeGreaterThanOrEqual(2);
    expect(namespaces[0]).toBe('ns-');
    expect(namespaces.some((n) => n.startsWith('ns-tune%3A'))).toBe(true);

    const r2 = await build(new FileCheckpointSaver(root)).invoke(new Command({ resume: '32' }), config);
    expect(r2.messages.map((m) => [m.constructor.name, m.content])).toEqual([
      ['HumanMessage', 'tune it'],
      ['AIMessage', 'tile=32'],
    ]);
  });
});

describe('FileCheckpointSaver API', () => {
  async function seed(saver: FileCheckpointSaver, threadId: string, count: number): Promise<string[]> {
    const ids: string[] = [];
    let parent: string | undefined;
    for (let step = -1; step < count - 1; step++) {
      const checkpoint = { ...emptyCheckpoint(), id: uuid6(step + 2), channel_values: { step, messages: [new HumanMessage(`m${step}`)] } };
      const config = { configurable: { thread_id: threadId, checkpoint_ns: '', ...(parent ? { checkpoint_id: parent } : {}) } };
      const saved = await saver.put(config, checkpoint, { source: step === -1 ? 'input' : 'loop', step, parents: {}, run: { tag: step % 2 } } as never, {});
      parent = saved.configurable!.checkpoint_id as string;
      ids.push(parent);
    }
    return ids;
  }

  it('stores checkpoints so a new instance sees them, with LangChain types intact', async () => {
    const ids = await seed(new FileCheckpointSaver(root), 't1', 3);
    const saver = new FileCheckpointSaver(root);
    const latest = await saver.getTuple({ configurable: { thread_id: 't1' } });
    expect(latest!.config.configurable).toEqual({ thread_id: 't1', checkpoint_ns: '', checkpoint_id: ids[2] });
    expect(latest!.parentConfig!.configurable!.checkpoint_id).toBe(ids[1]);
    const messages = latest!.checkpoint.channel_values.messages as HumanMessage[];
    expect(messages[0]).toBeInstanceOf(HumanMessage);
    expect(messages[0]!.content).toBe('m1');
    expect(latest!.metadata).toMatchObject({ source: 'loop', step: 1 });

    const first = await saver.getTuple({ configurable: { thread_id: 't1', checkpoint_id: ids[0] } });
    expect(first!.checkpoint.channel_values.step).toBe(-1);
    expect(first!.parentConfig).toBeUndefined();
    expect(await saver.getTuple({ configurable: { thread_id: 't1', checkpoint_id: 'nope' } })).toBeUndefined();
    expect(await saver.getTuple({ configurable: { thread_id: 'other' } })).toBeUndefined();
    expect(await saver.getTuple({ configurable: {} })).toBeUndefined();
  });

  it('lists newest first with limit, before and metadata filters, per thread or across threads', async () => {
    const saver = new FileCheckpointSaver(root);
    const a = await seed(saver, 'a', 4);
    const b = await seed(saver, 'b', 2);
    const ids = (ts: CheckpointTuple[]) => ts.map((t) => t.config.configurable!.checkpoint_id);

    expect(ids(await collect(saver.list({ configurable: { thread_id: 'a' } })))).toEqual([...a].reverse());
    expect(ids(await collect(saver.list({ configurable: { thread_id: 'a' } }, { limit: 2 })))).toEqual([a[3], a[2]]);
    expect(ids(await collect(saver.list({ configurable: { thread_id: 'a' } }, { before: { configurable: { checkpoint_id: a[2] } } })))).toEqual([a[1], a[0]]);
    expect(ids(await collect(saver.list({ configurable: { thread_id: 'a' } }, { filter: { source: 'input' } })))).toEqual([a[0]]);
    expect(ids(await collect(saver.list({ configurable: { thread_id: 'a' } }, { filter: { run: { tag: 0 } } })))).toEqual([a[3], a[1]]);
    expect(ids(await collect(saver.list({ configurable: { thread_id: 'a' } }, { filter: { step: 1, source: 'loop' }, limit: 5 })))).toEqual([a[2]]);
    expect(ids(await collect(saver.list({ configurable: { thread_id: 'a', checkpoint_id: a[1] } })))).toEqual([a[1]]);
    expect(ids(await collect(saver.list({ configurable: { thread_id: 'a', checkpoint_ns: 'elsewhere' } })))).toEqual([]);
    const all = ids(await collect(saver.list({ configurable: {} })));
    expect(all).toHaveLength(6);
    expect(new Set(all)).toEqual(new Set([...a, ...b]));
    expect(all).toEqual([...all].sort().reverse());
  });

  it('stores pending writes in LangGraph order; regular slots keep the first value, special ones the latest', async () => {
    const saver = new FileCheckpointSaver(root);
    const [id] = await seed(saver, 'w', 1);
    const config = { configurable: { thread_id: 'w', checkpoint_ns: '', checkpoint_id: id } };
    await saver.putWrites(config, [['log', 'first'], ['blob', new Uint8Array([255, 0, 1])]], 'task-b', 'path-1');
    await saver.putWrites(config, [['log', 'retried']], 'task-b', 'path-1');
    await saver.putWrites(config, [['__error__', 'boom 1']], 'task-a', 'path-1');
    await saver.putWrites(config, [['__error__', 'boom 2']], 'task-a', 'path-1');
    await saver.putWrites(config, [['input', 'from the graph input']], 'task-z');

    const reloaded = await new FileCheckpointSaver(root).getTuple(config);
    const writes = reloaded!.pendingWrites!;
    expect(writes.map(([task, channel]) => [task, channel])).toEqual([
      ['task-z', 'input'], // no task path sorts first
      ['task-a', '__error__'],
      ['task-b', 'log'],
      ['task-b', 'blob'],
    ]);
    expect(writes[1]![2]).toBe('boom 2');
    expect(writes[2]![2]).toBe('first');
    expect(writes[3]![2]).toEqual(new Uint8Array([255, 0, 1]));
    await expect(saver.putWrites({ configurable: { thread_id: 'w' } }, [['x', 1]], 't')).rejects.toThrow(/checkpoint_id/);
  });

  it('serializes concurrent putWrites of one task without losing any', async () => {
    const saver = new FileCheckpointSaver(root);
    const [id] = await seed(saver, 'c', 1);
    const config = { configurable: { thread_id: 'c', checkpoint_ns: '', checkpoint_id: id } };
    await Promise.all(Array.from({ length: 10 }, (_, i) => saver.putWrites(config, [[`__error__`, `e${i}`]], `task-${i % 3}`)));
    const writes = (await saver.getTuple(config))!.pendingWrites!;
    expect(writes.map((w) => w[0])).toEqual(['task-0', 'task-1', 'task-2']);
    expect(writes.map((w) => w[2])).toEqual(['e9', 'e7', 'e8']);
  });

  it('ignores what a crash mid-write leaves behind (temp files), and files are whole JSON', async () => {
    const saver = new FileCheckpointSaver(root);
    const ids = await seed(saver, 'crash', 2);
    const dir = join(root, 't-crash', 'ns-', 'checkpoints');
    await fs.writeFile(join(dir, '.zzzz.json.999.abc.tmp'), '{"format":1,"thread_id":"cr');
    const latest = await new FileCheckpointSaver(root).getTuple({ configurable: { thread_id: 'crash' } });
    expect(latest!.config.configurable!.checkpoint_id).toBe(ids[1]);
    expect(await collect(saver.list({ configurable: { thread_id: 'crash' } }))).toHaveLength(2);
    for (const file of await filesUnder(join(root, 't-crash'))) {
      if (!file.endsWith('.tmp')) expect(() => JSON.parse(readFileSync(join(root, 't-crash', file), 'utf8'))).not.toThrow();
    }
  });

  it('reports a corrupted checkpoint file instead of resuming from garbage', async () => {
    const saver = new FileCheckpointSaver(root);
    const [id] = await seed(saver, 'bad', 1);
    await fs.writeFile(join(root, 't-bad', 'ns-', 'checkpoints', `${id}.json`), '{"format": 1}');
    await expect(saver.getTuple({ configurable: { thread_id: 'bad' } })).rejects.toThrow(/corrupt file/);
  });

  it('escapes ids into safe, case-preserving names', async () => {
    const saver = new FileCheckpointSaver(root);
    const weird = 'Thread/../ÄB c';
    await seed(saver, weird, 1);
    await seed(saver, weird.toLowerCase(), 1);
    const names = (await fs.readdir(root)).sort();
    expect(names).toHaveLength(2);
    expect(names.every((n) => /^t-[a-z0-9_%A-F-]+$/.test(n))).toBe(true);
    expect((await saver.getTuple({ configurable: { thread_id: weird } }))!.config.configurable!.thread_id).toBe(weird);
    const long = 'x'.repeat(500);
    await seed(saver, long, 1);
    expect((await saver.getTuple({ configurable: { thread_id: long } }))!.config.configurable!.thread_id).toBe(long);
  });

  it('deleteThread removes every file of that thread and nothing else', async () => {
    const saver = new FileCheckpointSaver(root);
    const [id] = await seed(saver, 'gone', 2);
    await saver.putWrites({ configurable: { thread_id: 'gone', checkpoint_ns: '', checkpoint_id: id } }, [['x', 1]], 'task');
    await seed(saver, 'kept', 1);
    expect((await filesUnder(root)).some((f) => f.startsWith('t-gone/'))).toBe(true);

    await saver.deleteThread('gone');
    expect((await filesUnder(root)).every((f) => f.startsWith('t-kept/'))).toBe(true);
    expect(await new FileCheckpointSaver(root).getTuple({ configurable: { thread_id: 'gone' } })).toBeUndefined();
    expect(await collect(saver.list({ configurable: { thread_id: 'gone' } }))).toEqual([]);
    expect(await saver.getTuple({ configurable: { thread_id: 'kept' } })).toBeDefined();
    await saver.deleteThread('never-existed');
  });
});
