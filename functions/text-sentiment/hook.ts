// {"text": "..."} (or a text/plain body) in; {"label", "score", "probs", "tokens"} out. The
// tokenizer: lowercase words, looked up in vocab.json (bundled into the hook), unknown words → 0.
import { defineHook, InvalidInputError } from '@hearth/sdk';

import vocab from './vocab.json' with { type: 'json' };

const index = new Map(vocab.words.map((w: string, i: number) => [w, i]));

export function tokenize(text: string): BigInt64Array {
  const words = text.toLowerCase().match(/[a-z']+/g) ?? [];
  const ids = words.map((w) => BigInt(index.get(w) ?? 0));
  return BigInt64Array.from(ids.length > 0 ? ids : [0n]);
}

export default defineHook({
  pre(request) {
    const text =
      request.kind === 'json' ? (request.json as { text?: unknown }).text : new TextDecoder().decode(request.bytes);
    if (typeof text !== 'string' || text.length === 0)
      throw new InvalidInputError('send {"text": "some words"} or a text/plain body');
    if (text.length > 100_000) throw new InvalidInputError('the text is over 100,000 characters');
    const ids = tokenize(text);
    return { ids: { dtype: 'INT64', shape: [ids.length], data: ids } };
  },
  post(outputs, request) {
    const [negative, positive] = outputs.probs!.data as Float32Array;
    const tokens =
      request.kind === 'json'
        ? (String((request.json as { text: string }).text)
            .toLowerCase()
            .match(/[a-z']+/g)?.length ?? 0)
        : undefined;
    return {
      label: positive! >= negative! ? 'positive' : 'negative',
      score: Math.max(positive!, negative!),
      probs: { negative, positive },
      tokens,
    };
  },
});
