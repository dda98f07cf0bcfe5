/** The runner host: each function version's runner process, jailed, with its output in the logs. */
import { discardEarlyTemplate, groupOf, RunnerHost } from '../../runtime/index.js';
import type { Config } from '../config/index.js';
import type { FunctionLogs } from '../functions/index.js';
import type { Logger } from '../log/index.js';

/** Runners when the config isolates functions in processes (HEARTH_ISOLATION=process), else none. */
export async function createRunners(
  config: Config,
  functionLogs: FunctionLogs,
  runnerLog: Logger,
): Promise<RunnerHost | undefined> {
  // The template platform/entry started, where the config turns out to need none.
  if (config.isolation !== 'process' || config.sandbox === 'off' || !config.runnerTemplate)
    await discardEarlyTemplate();
  return config.isolation === 'process'
    ? new RunnerHost({
        // A root node runs user code as other users; a node that is not root gives its runners
        // uids of their own inside their user namespaces (runtime/runner/walls/jail.ts).
        users: {
          firstUid: config.runnerUidBase,
          gid: process.getuid?.() === 0 ? await groupOf(config.runnerUser) : config.runnerUidBase,
        },
        sandbox: config.sandbox,
        template: config.runnerTemplate,
        intraOpThreads: config.intraOpThreads,
        arenaBytes: config.arenaMb * 2 ** 20,
        memoryBudgetBytes: config.runnerMemoryBudgetMb * 2 ** 20,
        onTemplateFailed: (why) =>
          runnerLog.warn({ why }, 'runners are not forked from a template; each starts Node and LibTorch itself'),
        onArenaFailed: (why) =>
          runnerLog.warn({ why }, 'runners get no shared-memory arena; tensors go on their sockets'),
        onLine: (line, runner) => {
          runnerLog.info({ function: runner.label, runner: runner.pid, line }, 'runner output');
          if (runner.label) functionLogs.addRunnerLine(runner.label, line);
        },
      })
    : undefined;
}
