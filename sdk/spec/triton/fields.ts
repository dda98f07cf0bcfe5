/** Reading config.pbtxt messages: Triton's data type names, and a field reader that refuses unknown fields. */
import { InvalidInputError } from '../../errors.js';
import type { DType } from '../../tensor.js';
import type { TextMessage, TextValue } from './text-format.js';

/** Triton's TYPE_* names → KServe datatypes (TYPE_STRING is BYTES). */
export const DATA_TYPES: Record<string, DType> = {
  TYPE_BOOL: 'BOOL',
  TYPE_UINT8: 'UINT8',
  TYPE_UINT16: 'UINT16',
  TYPE_UINT32: 'UINT32',
  TYPE_UINT64: 'UINT64',
  TYPE_INT8: 'INT8',
  TYPE_INT16: 'INT16',
  TYPE_INT32: 'INT32',
  TYPE_INT64: 'INT64',
  TYPE_FP16: 'FP16',
  TYPE_FP32: 'FP32',
  TYPE_FP64: 'FP64',
  TYPE_BF16: 'BF16',
  TYPE_STRING: 'BYTES',
};

export function enumOf(v: TextValue): string | undefined {
  return typeof v === 'object' && typeof v.enum === 'string' ? v.enum : undefined;
}

/** Reads one message's fields, refusing any it does not know. */
export class Fields {
  private readonly used = new Set<string>();
  constructor(
    private readonly fields: TextMessage,
    private readonly where: string,
  ) {}

  private fail(field: string, why: string): never {
    throw new InvalidInputError(`config.pbtxt: ${this.path(field)} ${why}`, { reason: this.path(field) });
  }

  path(field: string): string {
    return this.where ? `${this.where}.${field}` : field;
  }

  all(field: string): TextValue[] {
    this.used.add(field);
    return this.fields[field] ?? [];
  }

  one(field: string): TextValue | undefined {
    const values = this.all(field);
    if (values.length > 1) this.fail(field, 'is given more than once');
    return values[0];
  }

  number(field: string): number | undefined {
    const v = this.one(field);
    if (v !== undefined && typeof v !== 'number') this.fail(field, 'must be a number');
    return v;
  }

  numbers(field: string): number[] {
    return this.all(field).map((v) => (typeof v === 'number' ? v : this.fail(field, 'must be a list of numbers')));
  }

  string(field: string): string | undefined {
    const v = this.one(field);
    if (v !== undefined && typeof v !== 'string') this.fail(field, 'must be a string');
    return v;
  }

  bool(field: string): boolean | undefined {
    const v = this.one(field);
    if (v !== undefined && typeof v !== 'boolean') this.fail(field, 'must be true or false');
    return v;
  }

  enumValue(field: string): string | undefined {
    const v = this.one(field);
    if (v === undefined) return undefined;
    return enumOf(v) ?? this.fail(field, 'must be an enum value');
  }

  messages(field: string): Fields[] {
    return this.all(field).map((v, i) =>
      typeof v === 'object' && enumOf(v) === undefined
        ? new Fields(v as TextMessage, `${this.path(field)}[${i}]`)
        : this.fail(field, 'must be a message'),
    );
  }

  message(field: string): Fields | undefined {
    const v = this.one(field);
    if (v === undefined) return undefined;
    if (typeof v !== 'object' || enumOf(v) !== undefined) this.fail(field, 'must be a message');
    return new Fields(v as TextMessage, this.path(field));
  }

  /** Refuses a field that is present and not equal to a value Hearth can honour. */
  refuseUnless(field: string, acceptable: (v: TextValue) => boolean, why: string): void {
    for (const v of this.all(field)) if (!acceptable(v)) this.fail(field, why);
  }

  /** Any field not read so far is one Hearth cannot honour. */
  done(): void {
    for (const field of Object.keys(this.fields)) {
      if (!this.used.has(field))
        this.fail(field, 'is not supported by Hearth; remove it or see the spec reference for what Hearth takes');
    }
  }
}
