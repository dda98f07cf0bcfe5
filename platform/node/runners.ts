/** The runner host: each function version's runner process, jailed, with its output in the logs. */
import { groupOf, RunnerHost } from '../../runtime/index.js';
import type { Config } from '../config/index.js';
import type { FunctionLogs } from '../functions/index.js';
import type { Logger } from '../log/index.js';

/** Runners when the config isolates functions in processes (HEARTH_ISOLATION=process), else none. */
export async function createRunners(
  config: Config,
  functionLogs: FunctionLogs,
  runnerLog: Logger,
): Promise<RunnerHost | undefined> {
  return config.isolation === 'process'
    ? new RunnerHost({
        // A root node runs user code as other users; a node that is not root gives its runners
        // uids of their own inside their user namespaces (runtime/runner/walls/jail.ts).
        users: {
          firstUid: config.runnerUidBase,
          gid: process.getuid?.() === 0 ? await groupOf(config.runnerUser) : config.runnerUidBase,
        },
        sandbox: config.sandbox,
        intraOpThreads: config.intraOpThreads,
        arenaBytes: config.arenaMb * 2 ** 20,
        onArenaFailed: (why) =>
          runnerLog.warn({ why }, 'runners get no shared-memory arena; tensors go on their sockets'),
        onLine: (line, runner) => {
          runnerLog.info({ function: runner.label, runner: runner.pid, line }, 'runner output');
          if (runner.label) functionLogs.addRunnerLine(runner.label, line);
        },
      })
    : undefined;
}
