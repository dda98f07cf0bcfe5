/**
 * A reader for protobuf text format, the syntax of Triton's config.pbtxt.
 *
 * Hand-written because the one npm package for it (prototxt-parser 0.1.5) rejects comments and
 * Triton's `input [ { … } ]` lists. Without the .proto schema a reader cannot tell a repeated field
 * from a singular one, so every field reads as the list of its occurrences (`dims: [3, 224]` and
 * `dims: 3 dims: 224` read the same); the converter says which fields are singular.
 *
 * Grammar: message := field*; field := name (':' value | ':'? '{' message '}' | ':'? '<' message '>'
 * | ':'? '[' (value | '{' message '}') (',' …)* ']') [',' | ';']; value := string | number | identifier.
 */

export type TextValue = string | number | boolean | TextMessage | { enum: string };
export interface TextMessage {
  [field: string]: TextValue[];
}

export class TextFormatError extends Error {
  override readonly name = 'TextFormatError';
}

interface Token {
  kind: 'ident' | 'string' | 'number' | 'punct';
  text: string;
  value?: string | number;
  line: number;
}

const PUNCT = new Set([':', '{', '}', '[', ']', '<', '>', ',', ';']);

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  let line = 1;
  while (i < source.length) {
    const c = source[i]!;
    if (c === '\n') {
      line++;
      i++;
    } else if (/\s/.test(c)) {
      i++;
    } else if (c === '#') {
      while (i < source.length && source[i] !== '\n') i++;
    } else if (PUNCT.has(c)) {
      tokens.push({ kind: 'punct', text: c, line });
      i++;
    } else if (c === '"' || c === "'") {
      let j = i + 1;
      let out = '';
      while (j < source.length && source[j] !== c) {
        if (source[j] === '\n') throw new TextFormatError(`line ${line}: unterminated string`);
        if (source[j] === '\\') {
          const e = source[j + 1];
          out += e === 'n' ? '\n' : e === 't' ? '\t' : e === 'r' ? '\r' : (e ?? '');
          j += 2;
        } else {
          out += source[j];
          j++;
        }
      }
      if (j >= source.length) throw new TextFormatError(`line ${line}: unterminated string`);
      const previous = tokens[tokens.length - 1];
      if (previous?.kind === 'string')
        previous.value = `${previous.value as string}${out}`; // "a" "b" concatenates
      else tokens.push({ kind: 'string', text: source.slice(i, j + 1), value: out, line });
      i = j + 1;
    } else {
      const m =
        /^[-+]?(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[fF]?|inf(?:inity)?|nan)|^[A-Za-z_][A-Za-z0-9_.]*/.exec(
          source.slice(i),
        );
      if (!m) throw new TextFormatError(`line ${line}: unexpected character ${JSON.stringify(c)}`);
      const text = m[0];
      const numeric = /^[-+]?(\d|\.\d|0[xX])/.test(text) || (/^[-+]?(inf|nan)/i.test(text) && /^[-+]/.test(text));
      if (numeric) tokens.push({ kind: 'number', text, value: Number(text.replace(/[fF]$/, '')), line });
      else tokens.push({ kind: 'ident', text, line });
      i += text.length;
    }
  }
  return tokens;
}

class Parser {
  private pos = 0;
  constructor(private readonly tokens: Token[]) {}

  parseMessage(close?: string): TextMessage {
    const message: TextMessage = {};
    for (;;) {
      const t = this.tokens[this.pos];
      if (t === undefined) {
        if (close) throw new TextFormatError(`unexpected end of input: missing "${close}"`);
        return message;
      }
      if (close && t.kind === 'punct' && t.text === close) {
        this.pos++;
        return message;
      }
      if (t.kind !== 'ident') throw new TextFormatError(`line ${t.line}: expected a field name, got "${t.text}"`);
      this.pos++;
      const values = message[t.text] ?? [];
      message[t.text] = values;
      let next = this.peek(`a value for ${t.text}`);
      const colon = next.kind === 'punct' && next.text === ':';
      if (colon) {
        this.pos++;
        next = this.peek(`a value for ${t.text}`);
      }
      if (next.kind === 'punct' && (next.text === '{' || next.text === '<')) {
        this.pos++;
        values.push(this.parseMessage(next.text === '{' ? '}' : '>'));
      } else if (next.kind === 'punct' && next.text === '[') {
        // Triton writes `input [ … ]` without ':'
        this.pos++;
        this.parseList(values, t.text);
      } else if (colon) {
        values.push(this.parseScalar());
      } else {
        throw new TextFormatError(`line ${next.line}: expected ":" or "{" after ${t.text}`);
      }
      const sep = this.tokens[this.pos];
      if (sep?.kind === 'punct' && (sep.text === ',' || sep.text === ';')) this.pos++;
    }
  }

  private parseList(into: TextValue[], field: string): void {
    let t = this.peek(`"]" closing ${field}`);
    if (t.kind === 'punct' && t.text === ']') {
      this.pos++;
      return;
    }
    for (;;) {
      t = this.peek(`an element of ${field}`);
      if (t.kind === 'punct' && (t.text === '{' || t.text === '<')) {
        this.pos++;
        into.push(this.parseMessage(t.text === '{' ? '}' : '>'));
      } else {
        into.push(this.parseScalar());
      }
      t = this.peek(`"]" closing ${field}`);
      this.pos++;
      if (t.kind === 'punct' && t.text === ']') return;
      if (!(t.kind === 'punct' && t.text === ','))
        throw new TextFormatError(`line ${t.line}: expected "," or "]" in ${field}`);
    }
  }

  private parseScalar(): TextValue {
    const t = this.peek('a value');
    this.pos++;
    if (t.kind === 'string' || t.kind === 'number') return t.value!;
    if (t.kind === 'ident') {
      if (t.text === 'true' || t.text === 'True' || t.text === 't') return true;
      if (t.text === 'false' || t.text === 'False' || t.text === 'f') return false;
      return { enum: t.text };
    }
    throw new TextFormatError(`line ${t.line}: expected a value, got "${t.text}"`);
  }

  private peek(what: string): Token {
    const t = this.tokens[this.pos];
    if (t === undefined) throw new TextFormatError(`unexpected end of input: expected ${what}`);
    return t;
  }
}

export function parseTextFormat(source: string): TextMessage {
  return new Parser(tokenize(source)).parseMessage();
}
