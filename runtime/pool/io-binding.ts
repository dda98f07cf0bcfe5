/**
 * Which spec input goes to which forward() argument, and which model output is which spec output —
 * the rules of Triton's PyTorch backend (pytorch_backend's naming conventions), so a Triton config
 * whose inputs are listed in another order than forward() takes them still answers correctly:
 *
 * - inputs: by forward() argument name when every input is named after one; else by the
 *   `<name>__<index>` suffix when every input has one; else in the config's order;
 * - outputs: by the `<name>__<index>` suffix when every output has one; else in the config's order
 *   (a model that returns a dict is read by key, whatever the names).
 *
 * Where Triton would index past the arguments or bind two inputs to one argument, the binding is
 * refused at load with a message naming the inputs, rather than run with a wrong answer.
 */
import { ModelLoadError } from '../../sdk/errors.js';
import type { FunctionSpec, OutputSpec } from '../../sdk/spec/function-spec.js';
import type { DType } from '../../sdk/tensor.js';

export type InputRule = 'forward-argument' | 'named-index' | 'config-order' | 'dict';
export type OutputRule = 'named-index' | 'config-order';

export interface IoBinding {
  inputRule: InputRule;
  /** forwardOrder[p]: the index in modelInputs(spec) of forward()'s argument p. */
  forwardOrder: number[];
  outputRule: OutputRule;
  /** outputIndex[i]: the position in the model's returned tuple of modelOutputs(spec)[i]. */
  outputIndex: number[];
  /** rule 'dict': forward() takes one Dict[str, Tensor]; the inputs go in it under these names. */
  dictKeys?: string[];
}

export interface ForwardSignature {
  argNames: readonly string[];
  argTypes: readonly string[];
  minInputs: number;
  /** -1: variadic. */
  maxInputs: number;
}

/** `INPUT__2` → 2, as Triton reads it: the digits after the first "__"; undefined when there are none. */
export function namedIndex(name: string): number | undefined {
  const at = name.indexOf('__');
  if (at < 0) return undefined;
  const digits = name.slice(at + 2);
  return /^\d+$/.test(digits) ? Number(digits) : undefined;
}

function fail(spec: FunctionSpec, why: string): never {
  throw new ModelLoadError(`${spec.name}: ${why}`, { reason: 'ERR_BINDING' });
}

/** A permutation check: positions must be 0..n-1, each once. */
function checkPositions(
  spec: FunctionSpec,
  names: readonly string[],
  positions: readonly number[],
  what: string,
  count: string,
): void {
  const seen = new Map<number, string>();
  positions.forEach((p, i) => {
    const other = seen.get(p);
    if (other !== undefined)
      fail(spec, `${what} "${other}" and "${names[i]}" both bind to position ${p}; each position must be named once`);
    if (p >= names.length) fail(spec, `${what} "${names[i]}" binds to position ${p} but ${count}`);
    seen.set(p, names[i]!);
  });
}

/**
 * What forward() takes, by name and datatype: the spec's inputs, then a sequence model's control
 * inputs (the batcher fills them), then its state inputs (the node keeps them per sequence).
 */
export function modelInputs(spec: FunctionSpec): { name: string; dtype: DType | undefined }[] {
  return [
    ...spec.inputs.map((i) => ({ name: i.name, dtype: i.dtype })),
    ...(spec.sequence?.controls.map((c) => ({ name: c.name, dtype: undefined })) ?? []),
    ...(spec.sequence?.states.map((st) => ({ name: st.input, dtype: st.dtype })) ?? []),
  ];
}

/** What the model returns: the spec's outputs, then a sequence model's state outputs. */
export function modelOutputs(spec: FunctionSpec): OutputSpec[] {
  return [
    ...spec.outputs,
    ...(spec.sequence?.states.map((st) => ({ name: st.output, dtype: st.dtype, dims: st.dims })) ?? []),
  ];
}

export function bindIo(spec: FunctionSpec, model: ForwardSignature): IoBinding {
  const inputs = modelInputs(spec).map((i) => i.name);
  const n = inputs.length;
  // forward(self, inputs: Dict[str, Tensor]): every input by its name, as Triton's PyTorch backend passes them.
  if (model.argTypes.length === 1 && model.argTypes[0]!.startsWith('Dict')) {
    if (!/^Dict\(str, Tensor\)$/.test(model.argTypes[0]!))
      fail(spec, `forward() takes a ${model.argTypes[0]}; a dict input must be Dict[str, Tensor]`);
    return { inputRule: 'dict', forwardOrder: inputs.map((_, i) => i), dictKeys: inputs, ...bindOutputs(spec) };
  }
  if (n < model.minInputs || (model.maxInputs >= 0 && n > model.maxInputs)) {
    const expected =
      model.minInputs === model.maxInputs
        ? String(model.maxInputs)
        : `${model.minInputs} to ${model.maxInputs < 0 ? 'any number of' : model.maxInputs}`;
    const missing = model.argNames.slice(n, Math.max(n, model.minInputs));
    fail(
      spec,
      `the spec has ${n} input(s) (${inputs.join(', ') || 'none'}) but the model's forward(${model.argNames.join(', ')}) takes ${expected}: ` +
        (missing.length
          ? `add ${missing.map((a) => `"${a}"`).join(', ')} to inputs in hearth.yaml (config.pbtxt's input for a Triton folder)`
          : 'remove the extra inputs from hearth.yaml (config.pbtxt) or give forward() arguments for them'),
    );
  }
  model.argTypes.forEach((type, p) => {
    if (p < n && type.startsWith('Dict'))
      fail(
        spec,
        `forward() argument "${model.argNames[p]}" is a ${type}: only a forward() whose one argument is a Dict[str, Tensor] takes a dict (as in Triton)`,
      );
  });

  let inputRule: InputRule;
  let positions: number[];
  if (inputs.every((name) => model.argNames.includes(name))) {
    inputRule = 'forward-argument';
    positions = inputs.map((name) => model.argNames.indexOf(name));
    positions.forEach((p, i) => {
      if (p >= n)
        fail(
          spec,
          `input "${inputs[i]}" is forward()'s argument ${p} (0-based), but only ${n} input(s) are configured: configure the arguments before it too`,
        );
    });
  } else if (inputs.every((name) => namedIndex(name) !== undefined)) {
    inputRule = 'named-index';
    positions = inputs.map((name) => namedIndex(name)!);
    checkPositions(spec, inputs, positions, 'inputs', `the configuration has ${n} input(s)`);
  } else {
    inputRule = 'config-order';
    positions = inputs.map((_, i) => i);
  }
  const forwardOrder = new Array<number>(n);
  positions.forEach((p, i) => {
    forwardOrder[p] = i;
  });
  checkKinds(spec, inputs, positions, model);

  return { inputRule, forwardOrder, ...bindOutputs(spec) };
}

/**
 * TorchScript types carry no dtype, but they say what kind of value an argument takes: a BYTES input
 * arrives as a List[str], every other dtype as a Tensor. An input bound to an argument of another kind
 * (an `int`, a `List[str]` for an FP32 input) would fail inside forward() on every call.
 */
function checkKinds(
  spec: FunctionSpec,
  inputs: readonly string[],
  positions: readonly number[],
  model: ForwardSignature,
) {
  const dtypes = modelInputs(spec).map((i) => i.dtype);
  positions.forEach((p, i) => {
    const type = model.argTypes[p];
    const dtype = dtypes[i];
    if (type === undefined || dtype === undefined) return;
    // LibTorch names them `Tensor`, `Tensor?`, `str[]`, `str[]?` (Python's spelling in annotations).
    const takes = /^(Tensor|Optional\[Tensor\])\??$/.test(type)
      ? 'tensor'
      : /^(str\[\]|List\[str\]|Optional\[List\[str\]\])\??$/.test(type)
        ? 'strings'
        : 'other';
    const wants = dtype === 'BYTES' ? 'strings' : 'tensor';
    if (takes === wants) return;
    fail(
      spec,
      `input "${inputs[i]}" is ${dtype} (forward() gets it as ${wants === 'strings' ? 'a List[str]' : 'a Tensor'}) but the model's forward() argument "${model.argNames[p]}" is a ${type}: ` +
        `change the input's dtype in hearth.yaml (config.pbtxt) or the argument's type in forward()`,
    );
  });
}

function bindOutputs(spec: FunctionSpec): Pick<IoBinding, 'outputRule' | 'outputIndex'> {
  const outputs = modelOutputs(spec).map((o) => o.name);
  let outputRule: OutputRule = 'config-order';
  let outputIndex = outputs.map((_, i) => i);
  if (outputs.every((name) => namedIndex(name) !== undefined)) {
    outputRule = 'named-index';
    outputIndex = outputs.map((name) => namedIndex(name)!);
    const seen = new Map<number, string>();
    outputIndex.forEach((p, i) => {
      const other = seen.get(p);
      if (other !== undefined) fail(spec, `outputs "${other}" and "${outputs[i]}" both name the model's output ${p}`);
      seen.set(p, outputs[i]!);
    });
  }
  return { outputRule, outputIndex };
}
