/**
 * `hearth init <dir>`: a function folder that deploys as it is — hearth.yaml, hook.ts, export.py
 * (a small deterministic model made with python3-torch; `--template image`: an image classifier,
 * init-image.ts), a README, and a package.json and tsconfig.json for the hook's own npm packages
 * and its editor — and, where python3 with torch is found, model.pt made by running export.py.
 */
import { spawnSync } from 'node:child_process';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';

import { InvalidInputError } from '../errors.js';
import { HOOK_COMPILER_OPTIONS } from '../hooks/typecheck.js';
import { IMAGE_TEMPLATE } from './init-image.js';

const yaml = (
  name: string,
) => `# ${name}: a Hearth function. Reference: docs/functions-and-hooks.md (the function spec), or sdk/spec/hearth.schema.json.
name: ${name}
model: model.pt          # TorchScript, made by export.py
hook: hook.ts            # JSON in, tensors to the model, tensors out, JSON back
maxBatchSize: 16         # concurrent requests are batched along the first dimension
batching:
  maxQueueDelayUs: 2000
instances:
  device: auto           # CUDA when the node has it, else CPU
scaling:
  minInstances: 0        # scale to zero when idle
  maxInstances: 4
  targetQueueDepth: 8
  scaleDownAfterS: 300
inputs:
  - { name: x, dtype: FP32, dims: [4] }
outputs:
  - { name: y, dtype: FP32, dims: [3] }
# A request each new version must answer (pre → forward → post) before it takes any traffic.
example: { inputs: [[1, 2, 3, 4]] }
`;

const HOOK = `// {"inputs": [[4 numbers], ...]} in, {"outputs": [[3 numbers], ...]} out.
import { defineHook, InvalidInputError, inputFromJson, tensorToJson } from '@hearth/sdk';

export default defineHook({
  pre(request, ctx) {
    // A body that does not fit is the caller's error: InvalidInputError is a 400 that says what to send.
    if (request.kind !== 'json') throw new InvalidInputError('send JSON: {"inputs": [[4 numbers], ...]}');
    // inputFromJson checks the body against hearth.yaml's input x (FP32, [batch, 4]) and names the
    // field ("inputs[0][2] must be a number"). Tensors that break the spec after this are the hook's
    // own fault (500).
    return { x: inputFromJson(ctx, 'x', (request.json as { inputs?: unknown }).inputs, 'inputs') };
  },
  post(outputs) {
    return { outputs: tensorToJson(outputs.y!) };
  },
});
`;

const EXPORT = `"""Makes model.pt: a small MLP (4 -> 16 -> 3) with fixed weights, as TorchScript."""
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))

    def forward(self, x):
        return self.net(x)


if __name__ == "__main__":
    torch.jit.script(Model().eval()).save("model.pt")
    print("wrote model.pt")
`;

const README = (name: string) => `# ${name}

\`\`\`sh
python3 export.py                 # makes model.pt
hearth deploy .                   # bundles hook.ts, uploads model.pt, prints the URL
hearth invoke ${name} --data '{"inputs": [[1, 2, 3, 4]]}'
curl -s localhost:8000/fn/${name} -H 'content-type: application/json' -d '{"inputs": [[1, 2, 3, 4]]}'
\`\`\`

Replace export.py with your own model (any TorchScript file), then edit the inputs and outputs in
hearth.yaml and the JSON handling in hook.ts.

\`hearth deploy\` bundles hook.ts with everything it imports: npm packages the hook uses go in this
folder's package.json (\`npm install <package>\`). For your editor's types, install the SDK from
Hearth's packed tarball: \`npm install --save-dev /path/to/hearth-sdk-<version>.tgz\`.
`;

const PACKAGE = (name: string) => `${JSON.stringify({ name, private: true, type: 'module' }, null, 2)}\n`;

/** For editors (and \`tsc --noEmit\`); the hook is bundled by \`hearth deploy\`, not by tsc. */
const TSCONFIG = `${JSON.stringify(
  {
    compilerOptions: HOOK_COMPILER_OPTIONS,
    include: ['hook.ts'],
  },
  null,
  2,
)}\n`;

/** A template's own files (package.json and tsconfig.json are every template's). */
export interface Template {
  files(name: string): [file: string, text: string][];
}

const TEMPLATES: Record<string, Template> = {
  json: {
    files: (name) => [
      ['hearth.yaml', yaml(name)],
      ['hook.ts', HOOK],
      ['export.py', EXPORT],
      ['README.md', README(name)],
    ],
  },
  image: IMAGE_TEMPLATE,
};

/** A DNS label from a folder name. */
export function functionName(dir: string): string {
  const name = basename(resolve(dir))
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 63);
  if (!name) throw new InvalidInputError(`cannot make a function name from "${dir}": pass --name`);
  return name;
}

export async function initFunction(
  dir: string,
  options: { name?: string; python?: string; template?: string } = {},
): Promise<{ name: string; files: string[]; model: boolean; python?: string; note?: string; hint?: string }> {
  const template = TEMPLATES[options.template ?? 'json'];
  if (!template)
    throw new InvalidInputError(`--template ${options.template}: one of ${Object.keys(TEMPLATES).join(', ')}`);
  const existing = await readdir(dir).catch(() => [] as string[]);
  if (existing.length > 0) throw new InvalidInputError(`${dir} is not empty: init writes into a new or empty folder`);
  const name = options.name ?? functionName(dir);
  if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(name))
    throw new InvalidInputError(`--name ${name}: a function name is a DNS label (lowercase letters, digits, "-")`);
  await mkdir(dir, { recursive: true });
  const files: [string, string][] = [
    ...template.files(name),
    ['package.json', PACKAGE(name)],
    ['tsconfig.json', TSCONFIG],
  ];
  for (const [file, text] of files) await writeFile(join(dir, file), text);
  // The first Python that has PyTorch: the one named, then python3 on PATH, then the system's.
  const candidates = [
    ...new Set(
      [options.python ?? process.env.HEARTH_PYTHON, 'python3', '/usr/bin/python3'].filter((p): p is string =>
        Boolean(p),
      ),
    ),
  ];
  const python = candidates.find(
    (candidate) => spawnSync(candidate, ['export.py'], { cwd: dir, encoding: 'utf8' }).status === 0,
  );
  const model = python !== undefined;
  // The PATH's python3 was tried and has no PyTorch: the folder's README names the one that has.
  const pathPythonLacks =
    python !== undefined &&
    candidates.indexOf('python3') >= 0 &&
    candidates.indexOf('python3') < candidates.indexOf(python);
  if (python && pathPythonLacks) {
    const readme = join(dir, 'README.md');
    const text = await readFile(readme, 'utf8').catch(() => undefined);
    if (text !== undefined) await writeFile(readme, text.replaceAll('python3 export.py', `${python} export.py`));
  }
  return {
    name,
    files: [...files.map(([f]) => f), ...(model ? ['model.pt'] : [])],
    model,
    // Which Python made model.pt: a user with several should know (HEARTH_PYTHON chooses).
    ...(python ? { python } : {}),
    ...(pathPythonLacks ? { note: `the python3 on PATH has no PyTorch: run export.py with ${python}` } : {}),
    ...(model
      ? {}
      : {
          hint: `run \`python3 export.py\` in ${dir} with a Python that has PyTorch to make model.pt (tried ${candidates.join(', ')}; set HEARTH_PYTHON or --python to choose)`,
        }),
  };
}
