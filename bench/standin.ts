// TEST DOUBLE for benchmarks: the model stand-in (bench/standin/server.ts) as a process of its own, for the GPU machine
// or a terminal. It prints its OpenAI base URL on stdout (one line; point a session's --base-url at it) and serves until
// it is stopped (SIGINT, SIGTERM). What it answers and why: bench/standin/README.md.
//   node dist/bench/standin.js --pool matmul_naive --seed 3 --latency 8-40 --port 0 --log standin.jsonl
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { loadPool, poolNames } from './standin/pool';
import { parseLatency, startStandin } from './standin/server';

// The bundle runs from dist/bench/; the source from bench/.
const root = path.basename(path.dirname(__dirname)).startsWith('dist') ? path.resolve(__dirname, '..', '..') : path.resolve(__dirname, '..');
const POOLS = path.join(root, 'bench', 'standin', 'pools');

const USAGE = `usage: node dist/bench/standin.js --pool NAME [options]
  --pool NAME        the pool of rewrites to answer from (${poolNames(POOLS).join(', ') || 'none found'})
  --seed N           seeds every draw (default 0)
  --latency MIN-MAX  seconds each answer waits, uniform in the range, or one value (default 8-40; 0 for quality runs)
  --think RATE       the chance of a <think> block before an answer, 0 to 1 (default 0.25)
  --test-size N      the size of the test it designs (default: the pool's)
  --log FILE         append one JSON line per request to FILE
  --host HOST        default 127.0.0.1
  --port PORT        default 0 (a free port)
  --model NAME       the model it says it is (default standin-POOL)`;

function integer(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value)) throw new RangeError(`Expected an integer for --${name} but received "${text}"`);
  return value;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      pool: { type: 'string' },
      seed: { type: 'string' },
      latency: { type: 'string' },
      think: { type: 'string' },
      'test-size': { type: 'string' },
      log: { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' },
      model: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  if (values.pool === undefined) throw new RangeError('--pool is required');
  const pool = loadPool(POOLS, values.pool);
  const latency = parseLatency(values.latency ?? '8-40');
  const thinkRate = values.think === undefined ? 0.25 : Number(values.think);
  const server = await startStandin({
    pool,
    seed: integer('seed', values.seed, 0),
    latency,
    thinkRate,
    testSize: integer('test-size', values['test-size'], pool.test.defaultSize),
    port: integer('port', values.port, 0),
    ...(values.log !== undefined && { logFile: values.log }),
    ...(values.host !== undefined && { host: values.host }),
    ...(values.model !== undefined && { model: values.model }),
  });
  console.log(server.baseUrl);
  console.error(`model stand-in (a test double, not a model): pool ${pool.name} (${pool.variants.length} variants), latency ${latency.minS}-${latency.maxS} s${values.log ? `, log ${values.log}` : ''}`);
  const stop = () => void server.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((error: unknown) => {
  console.error(`standin: ${error instanceof Error ? error.message : String(error)}\n\n${USAGE}`);
  process.exit(2);
});
