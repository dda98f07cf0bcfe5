/**
 * What the kernel's jail gave a node's runners, as the host records it: whether hearth-jail is
 * there at all, each jailed runner's report checked (`strict`: every layer, or no runner), the
 * runners' cgroups where the node may make them, and the first report kept as the sandbox's.
 */
import { existsSync } from 'node:fs';

import type { JailLayers, RunnerCgroup, SandboxMode } from '../walls/index.js';
import { describeLayers, jailPath, missingLayers, RunnerCgroups } from '../walls/index.js';
import type { RunnerProcess } from './runner-process.js';

/** What the jail applied to runners: its layers, why any is missing, and a line saying so. */
export interface SandboxReport {
  layers: JailLayers;
  notes: string[];
  summary: string;
}

export class SandboxRecord {
  #cgroups: Promise<RunnerCgroups | { missing: string }> | undefined;
  #cgroupsMissing: string | undefined;
  /** The layers the first jailed runner reported, and why any is missing. */
  #layers: { layers: JailLayers; notes: string[] } | undefined;
  #reported: (report: SandboxReport) => void = () => undefined;
  /** Resolves with the first jailed runner's report (the spare's, or a cold start's when the spare is late). */
  readonly reported: Promise<SandboxReport> = new Promise((resolve) => {
    this.#reported = resolve;
  });

  /**
   * Whether hearth-jail is there to run; `auto` goes on without it (said once, as the layers'
   * report), `strict` does not.
   */
  jailFound(mode: SandboxMode): boolean {
    const path = jailPath();
    if (existsSync(path)) return true;
    const why = `hearth-jail is not at ${path}: build it with the addon (npm run build:native), or name it with HEARTH_JAIL`;
    if (mode === 'strict') throw new Error(`HEARTH_SANDBOX=strict: ${why}`);
    this.#layers ??= {
      layers: {
        namespaces: '',
        privateProc: false,
        uid: false,
        landlock: 0,
        seccomp: false,
        cgroup: false,
        oomScoreAdj: 0,
      },
      notes: [why],
    };
    return false;
  }

  /** The jail's report of a runner, checked (strict: every layer) and kept for sandbox(). */
  check(runner: RunnerProcess, mode: SandboxMode): void {
    const report = runner.jail;
    if (!report) {
      runner.kill('it started without its jail');
      throw new Error('a runner started without reporting its jail (hearth-jail)');
    }
    const notes = [...report.notes];
    if (!report.layers.cgroup && this.#cgroupsMissing) notes.push(`cgroup: ${this.#cgroupsMissing}`);
    // A fairness layer, not a wall: strict does not ask for it, the report says when it is missing.
    const cpu = runner.cgroup?.cpu ?? false;
    if (report.layers.cgroup && !cpu)
      notes.push('cpu: no cpu cgroup controller (cpu.weight or cpu.shares): runners share the cores by thread count');
    const missing = missingLayers(report.layers);
    if (mode === 'strict' && missing.length > 0) {
      runner.kill('its jail is missing layers');
      throw new Error(`HEARTH_SANDBOX=strict: a runner's jail lacks ${missing.join(', ')}: ${notes.join('; ')}`);
    }
    if (this.#layers) return;
    this.#layers = { layers: { ...report.layers, cpu }, notes };
    this.#reported(this.sandbox!);
  }

  /** The runner's cgroup, where the node may make one (else none: strict refuses). */
  async cgroup(name: string, mode: SandboxMode): Promise<RunnerCgroup | undefined> {
    this.#cgroups ??= RunnerCgroups.open();
    const cgroups = await this.#cgroups;
    if (cgroups instanceof RunnerCgroups) return cgroups.create(name);
    this.#cgroupsMissing = cgroups.missing;
    if (mode === 'strict') throw new Error(`HEARTH_SANDBOX=strict: ${cgroups.missing}`);
    return undefined;
  }

  /**
   * The layers of the kernel's jail the first runner reported, and why any is missing; undefined
   * when runners are not jailed or none has started.
   */
  get sandbox(): SandboxReport | undefined {
    return this.#layers && { ...this.#layers, summary: describeLayers(this.#layers.layers) };
  }

  /** Removes the node's cgroups (its runners have ended). */
  async close(): Promise<void> {
    const cgroups = await this.#cgroups;
    if (cgroups instanceof RunnerCgroups) await cgroups.close();
  }
}
