// A real single-node Slurm cluster on localhost for tests: Debian's slurmctld, slurmd and munge (installed by
// scripts/install-slurm.sh), configured in a temporary directory and started as children of the test, as root, with
// what works in a container: no cgroups (proctrack/linuxproc, task/none), no accounting, free ports. The node has this
// machine's CPUs and memory (as `slurmd -C` reports them) and a number of GPUs for `--gres=gpu:N`: empty files stand
// in for their device files (Slurm logs that they are no devices, and schedules them as GPUs all the same).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';

const root = join(__dirname, '..', '..');

/** A job or array task as `squeue --json` reports it (the fields the tests read; times in seconds since 1970). */
export interface SlurmJobRecord {
  job_id: number;
  /** The array's job id for an array task, else 0. */
  array_job_id: number;
  array_task_id: number | null;
  name: string;
  job_state: string;
  state_reason: string;
  exit_code: number;
  eligible_time: number;
  start_time: number;
  end_time: number;
  current_working_directory: string;
  /** What the job asked each node for, e.g. gres:gpu:1. */
  tres_per_node: string;
}

/** States a job does not leave. */
const FINAL_STATES = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT', 'NODE_FAIL', 'OUT_OF_MEMORY', 'PREEMPTED', 'BOOT_FAIL', 'DEADLINE']);

export interface LocalSlurm {
  /** The environment the client commands (sbatch, squeue, scancel) and the jobs need: this cluster's SLURM_CONF. */
  env: NodeJS.ProcessEnv;
  /** The jobs and array tasks of these job ids, once every one of them has ended (expectedCount records in all). */
  waitForJobs(jobIds: number[], expectedCount: number, timeoutMs: number): Promise<SlurmJobRecord[]>;
  /** Cancels what is still queued or running, waits for it to end, stops the daemons and removes the directory. */
  stop(): Promise<void>;
}

/**
 * Why no Slurm cluster can be started here (not root, the packages cannot be installed), or false when it can. Installs
 * the packages when missing (a minute or so; asynchronous, so that the test worker keeps answering meanwhile).
 */
export async function localSlurmSkipReason(): Promise<string | false> {
  if (process.getuid?.() !== 0) return `slurmd runs jobs as their users and so must run as root; this test runs as uid ${process.getuid?.()}`;
  const install = spawn('bash', [join(root, 'scripts', 'install-slurm.sh')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  install.stderr.setEncoding('utf8').on('data', (t: string) => (stderr += t));
  const status = await new Promise<number | string>((resolve) => {
    install.on('error', (e) => resolve(e.message));
    install.on('close', (code, signal) => resolve(code ?? `${signal}`));
  });
  if (status === 0) return false;
  return `Slurm is not installed and could not be: ${stderr.trim().split('\n').pop() || `install-slurm.sh ended with ${status}`}`;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

interface Daemon {
  name: string;
  child: ChildProcess;
  /** Its standard output and error. */
  log: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until probe answers; fails with the diagnostics after timeoutMs, or at once when a daemon has ended. */
async function waitFor<T>(what: string, timeoutMs: number, probe: () => T | undefined, diagnostics: () => string, daemons: readonly Daemon[]): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ended = daemons.find((d) => d.child.exitCode !== null || d.child.signalCode !== null);
    if (ended) throw new Error(`local Slurm: ${what}: ${ended.name} ended (${ended.child.exitCode ?? ended.child.signalCode})\n${diagnostics()}`);
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`local Slurm: ${what} within ${timeoutMs / 1000} s\n${diagnostics()}`);
    await sleep(200);
  }
}

function stopChild(child: ChildProcess, timeoutMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** Starts munged, slurmctld and slurmd (in that order) and waits until the node takes jobs. */
export async function startLocalSlurm(options: { gpus: number }): Promise<LocalSlurm> {
  if (!(Number.isInteger(options.gpus) && options.gpus >= 1)) throw new RangeError(`Expected at least one GPU but received ${options.gpus}`);
  const dir = mkdtempSync(join(tmpdir(), 'lkt-slurm-'));
  // munged refuses a socket in a directory that others cannot search (mkdtemp makes it 0700).
  chmodSync(dir, 0o755);
  const path = (...parts: string[]) => join(dir, ...parts);
  for (const d of ['state', 'spool', 'gpus']) mkdirSync(path(d));
  const children: Daemon[] = [];
  const logTails = () =>
    [...children.map((c) => c.log), path('slurmctld.log'), path('slurmd.log')]
      .filter((f) => existsSync(f))
      .map((f) => `--- ${f}\n${readFileSync(f, 'utf8').split('\n').slice(-15).join('\n')}`)
      .join('\n');
  const env = { ...process.env, SLURM_CONF: path('slurm.conf') };
  const start = (name: string, command: string, args: string[]) => {
    const log = path(`${name}.out`);
    writeFileSync(log, '');
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    // Should the test process end without stop() (an interrupted run), the daemons end with it.
    process.once('exit', () => child.kill('SIGKILL'));
    child.stdout!.on('data', (d: Buffer) => writeFileSync(log, d, { flag: 'a' }));
    child.stderr!.on('data', (d: Buffer) => writeFileSync(log, d, { flag: 'a' }));
    children.push({ name, child, log });
  };
  const client = (command: string, args: string[]) => spawnSync(command, args, { env, encoding: 'utf8' });
  // Every job the controller still knows: finished ones too, for MinJobAge (5 minutes).
  const jobs = (): SlurmJobRecord[] => {
    const r = client('squeue', ['--json']);
    if (r.status !== 0) throw new Error(`squeue --json failed: ${r.stderr}`);
    return (JSON.parse(r.stdout) as { jobs: SlurmJobRecord[] }).jobs;
  };

  const stop = async () => {
    if (children.some((c) => c.name === 'slurmctld' && c.child.exitCode === null)) {
      client('scancel', ['--user=root']);
      // A job's slurmstepd outlives slurmd: let every job end before the daemons go.
      await waitFor('the cancelled jobs did not end', 30_000, () => (jobs().every((j) => FINAL_STATES.has(j.job_state)) ? true : undefined), logTails, children).catch(() => undefined);
    }
    for (const { child } of [...children].reverse()) await stopChild(child, 10_000);
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    const key = path('munge.key');
    writeFileSync(key, randomBytes(1024), { mode: 0o600 });
    const socket = path('munge.socket');
    start('munged', 'munged', ['--foreground', `--socket=${socket}`, `--key-file=${key}`, `--pid-file=${path('munged.pid')}`, `--seed-file=${path('munged.seed')}`]);
    await waitFor('munged did not open its socket', 10_000, () => (existsSync(socket) ? true : undefined), logTails, children);

    // The node as slurmd finds this machine: "NodeName=host CPUs=2 Boards=1 SocketsPerBoard=1 ... RealMemory=24152".
    const hardware = /^NodeName=\S+ (.*)$/m.exec(spawnSync('slurmd', ['-C'], { encoding: 'utf8' }).stdout)?.[1];
    if (!hardware) throw new Error('local Slurm: `slurmd -C` did not describe this machine');
    const controller = hostname().split('.')[0]!;
    const node = 'lkt-node';
    const [controllerPort, nodePort] = [await freePort(), await freePort()];
    for (let i = 0; i < options.gpus; i++) writeFileSync(path('gpus', `gpu${i}`), '');
    writeFileSync(
      path('slurm.conf'),
      [
        'ClusterName=lkt-test',
        // slurmctld serves only where this names its own host.
        `SlurmctldHost=${controller}(127.0.0.1)`,
        `SlurmctldPort=${controllerPort}`,
        `SlurmdPort=${nodePort}`,
        'SlurmUser=root',
        'SlurmdUser=root',
        'AuthType=auth/munge',
        'CredType=cred/munge',
        `AuthInfo=socket=${socket}`,
        `StateSaveLocation=${path('state')}`,
        `SlurmdSpoolDir=${path('spool')}`,
        `SlurmctldPidFile=${path('slurmctld.pid')}`,
        `SlurmdPidFile=${path('slurmd.pid')}`,
        `SlurmctldLogFile=${path('slurmctld.log')}`,
        `SlurmdLogFile=${path('slurmd.log')}`,
        'ProctrackType=proctrack/linuxproc',
        'TaskPlugin=task/none',
        'JobAcctGatherType=jobacct_gather/none',
        'AccountingStorageType=accounting_storage/none',
        'JobCompType=jobcomp/none',
        'SwitchType=switch/none',
        'MpiDefault=none',
        'MailProg=/bin/true',
        'SelectType=select/cons_tres',
        'SelectTypeParameters=CR_Core',
        'ReturnToService=2',
        'GresTypes=gpu',
        `NodeName=${node} NodeAddr=127.0.0.1 ${hardware} Gres=gpu:${options.gpus} State=UNKNOWN`,
        `PartitionName=debug Nodes=${node} Default=YES MaxTime=INFINITE State=UP`,
        '',
      ].join('\n'),
    );
    writeFileSync(path('gres.conf'), `NodeName=${node} Name=gpu File=${path('gpus', `gpu[0-${options.gpus - 1}]`)}\n`);
    // In the foreground (-D), as children of this process; -i: no state from an earlier run.
    start('slurmctld', 'slurmctld', ['-D', '-i']);
    start('slurmd', 'slurmd', ['-D', '-N', node]);
    await waitFor(
      'the node did not come up idle',
      30_000,
      () => {
        const r = client('sinfo', ['--noheader', '--nodes', node, '--format=%T']);
        return r.status === 0 && r.stdout.trim() === 'idle' ? true : undefined;
      },
      logTails,
      children,
    );
  } catch (e) {
    await stop();
    throw e;
  }

  return {
    env,
    stop,
    waitForJobs: async (jobIds, expectedCount, timeoutMs) =>
      waitFor(
        `jobs ${jobIds.join(', ')} did not end`,
        timeoutMs,
        () => {
          const mine = jobs().filter((j) => jobIds.includes(j.array_job_id) || (j.array_job_id === 0 && jobIds.includes(j.job_id)));
          return mine.length === expectedCount && mine.every((j) => FINAL_STATES.has(j.job_state)) ? mine : undefined;
        },
        () => `${JSON.stringify(jobs().map((j) => [j.job_id, j.array_job_id, j.array_task_id, j.job_state, j.state_reason]))}\n${logTails()}`,
        children,
      ),
  };
}
