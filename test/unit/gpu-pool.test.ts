// The GPU pool's leases: one run per GPU at a time, first come first served, and a priority that lets work holding
// the GPUs in several leases (an evolutionary child's tuning, then its sanitizer run) finish before later work starts.
import { describe, expect, it } from 'vitest';
import { GpuPool } from '../../src/engine/resources/gpu-pool';

/** A lease that holds its GPUs until released by hand, recording the order leases were granted in. */
function lease(pool: GpuPool<string>, granted: string[], name: string, priority?: number) {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const done = pool.run('all', async () => {
    granted.push(name);
    await held;
  }, priority);
  return { release, done };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('GpuPool', () => {
  it('serves waiters first come, first served, and a lower priority number before a later or no priority', async () => {
    const pool = new GpuPool(['gpu0']);
    const granted: string[] = [];
    const first = lease(pool, granted, 'child 3 tuning', 3);
    const queued = [lease(pool, granted, 'no priority'), lease(pool, granted, 'child 5 tuning', 5), lease(pool, granted, 'child 4 tuning', 4), lease(pool, granted, 'child 3 sanitizer', 3), lease(pool, granted, 'child 4 sanitizer', 4)];
    await tick();
    expect(granted).toEqual(['child 3 tuning']);
    for (const next of [first, queued[3]!, queued[2]!, queued[4]!, queued[1]!, queued[0]!]) {
      next.release();
      await next.done;
      await tick();
    }
    expect(granted).toEqual(['child 3 tuning', 'child 3 sanitizer', 'child 4 tuning', 'child 4 sanitizer', 'child 5 tuning', 'no priority']);
  });

  it('counts the GPU-seconds each priority held, and every lease in the total', async () => {
    const pool = new GpuPool(['gpu0', 'gpu1']);
    const wait = (ms: number) => () => new Promise<void>((resolve) => setTimeout(resolve, ms));
    await pool.run('one', wait(30), 7);
    await pool.run('all', wait(20), 7);
    await pool.run('one', wait(20));
    expect(pool.busySOf(7)).toBeGreaterThanOrEqual(0.029 + 2 * 0.019);
    expect(pool.busySOf(8)).toBe(0);
    expect(pool.busyS).toBeGreaterThanOrEqual(pool.busySOf(7) + 0.019);
  });
});
