/**
 * The D-Bus wire format (the D-Bus specification's "Message Protocol"): values marshalled by their
 * type signature, with each type aligned to its natural boundary, and whole messages (a fixed
 * 12-byte start, an array of header fields, padding to 8, the body).
 *
 * Values in JavaScript: `y n q i u h` and `d` are numbers (`h` is an index into the message's file
 * descriptors), `x t` bigints, `b` a boolean, `s o g` strings, an array (`a…`) a JavaScript array,
 * a struct (`(…)`) and a dict entry (`{…}`) an array of their members, a variant (`v`)
 * {@link DBusVariant}. Written little-endian; read in the order the message's first byte says.
 */

/** A value with its own signature (`v`). */
export interface DBusVariant {
  readonly signature: string;
  readonly value: DBusValue;
}

export type DBusValue = number | bigint | boolean | string | DBusVariant | readonly DBusValue[];

/** Bytes that are not a D-Bus message, or a value that does not match its signature. */
export class DBusWireError extends Error {
  override readonly name = 'DBusWireError';
}

const FIXED_SIZES: Readonly<Record<string, number>> = { y: 1, b: 4, n: 2, q: 2, i: 4, u: 4, h: 4, x: 8, t: 8, d: 8, s: 4, o: 4, g: 1, a: 4, v: 1, '(': 8, '{': 8 };

/** The alignment of a type code. */
function alignmentOf(code: string): number {
  const size = FIXED_SIZES[code];
  if (size === undefined) throw new DBusWireError(`unknown type code "${code}"`);
  return size;
}

/** The length of the first complete type in `signature` from `at`. */
function completeTypeLength(signature: string, at: number): number {
  const code = signature[at];
  if (code === 'a') return 1 + completeTypeLength(signature, at + 1);
  if (code === '(' || code === '{') {
    const close = code === '(' ? ')' : '}';
    let i = at + 1;
    while (signature[i] !== close) {
      if (i >= signature.length) throw new DBusWireError(`unbalanced signature "${signature}"`);
      i += completeTypeLength(signature, i);
    }
    return i + 1 - at;
  }
  if (code === undefined) throw new DBusWireError(`incomplete signature "${signature}"`);
  alignmentOf(code);
  return 1;
}

/** The complete types of a signature, in order (`"sa{sv}u"` → `["s", "a{sv}", "u"]`). */
export function splitSignature(signature: string): string[] {
  const types: string[] = [];
  for (let at = 0; at < signature.length; ) {
    const length = completeTypeLength(signature, at);
    types.push(signature.slice(at, at + length));
    at += length;
  }
  return types;
}

/** Appends marshalled values to a growing buffer. */
export class WireWriter {
  private buffer: Buffer = Buffer.alloc(256);
  private length = 0;

  /** The bytes written so far. */
  bytes(): Buffer {
    return this.buffer.subarray(0, this.length);
  }

  get offset(): number {
    return this.length;
  }

  /** Pads with zero bytes to a multiple of `alignment`. */
  align(alignment: number): void {
    const pad = (alignment - (this.length % alignment)) % alignment;
    this.reserve(pad).fill(0);
  }

  /** Writes the values of `signature`, one complete type each. */
  writeAll(signature: string, values: readonly DBusValue[]): void {
    const types = splitSignature(signature);
    if (types.length !== values.length) throw new DBusWireError(`signature "${signature}" has ${types.length} values, got ${values.length}`);
    types.forEach((type, i) => {
      const value = values[i];
      if (value !== undefined) this.write(type, value);
    });
  }

  /** Writes one value of the complete type `type`. */
  write(type: string, value: DBusValue): void {
    const code = type[0] ?? '';
    this.align(alignmentOf(code));
    if (code === 'a') this.writeArray(type.slice(1), value);
    else if (code === '(' || code === '{') this.writeAll(type.slice(1, -1), expectArray(type, value));
    else if (code === 'v') this.writeVariant(value);
    else this.writeBasic(code, value);
  }

  /** Overwrites a uint32 written earlier (an array's length, known once its elements are written). */
  patchUint32(at: number, value: number): void {
    this.buffer.writeUInt32LE(value, at);
  }

  private writeArray(element: string, value: DBusValue): void {
    const items = expectArray(`a${element}`, value);
    const lengthAt = this.length;
    this.reserve(4);
    // The length excludes the padding before the first element, which is there even when empty.
    this.align(alignmentOf(element[0] ?? ''));
    const start = this.length;
    for (const item of items) this.write(element, item);
    this.patchUint32(lengthAt, this.length - start);
  }

  private writeVariant(value: DBusValue): void {
    if (!isVariant(value)) throw new DBusWireError('a variant needs { signature, value }');
    this.writeBasic('g', value.signature);
    this.write(value.signature, value.value);
  }

  private writeBasic(code: string, value: DBusValue): void {
    if (code === 's' || code === 'o' || code === 'g') {
      if (typeof value !== 'string') throw new DBusWireError(`type ${code} needs a string`);
      const text = Buffer.from(value, 'utf8');
      if (code === 'g') this.reserve(1).writeUInt8(text.length);
      else this.reserve(4).writeUInt32LE(text.length);
      text.copy(this.reserve(text.length + 1));
      this.buffer[this.length - 1] = 0;
      return;
    }
    this.writeFixed(code, value);
  }

  private writeFixed(code: string, value: DBusValue): void {
    const target = this.reserve(alignmentOf(code));
    if (code === 'b') target.writeUInt32LE(value === true ? 1 : 0);
    else if (code === 'x' || code === 't') {
      if (typeof value !== 'bigint') throw new DBusWireError(`type ${code} needs a bigint`);
      if (code === 'x') target.writeBigInt64LE(value);
      else target.writeBigUInt64LE(value);
    } else {
      if (typeof value !== 'number') throw new DBusWireError(`type ${code} needs a number`);
      writeNumber(target, code, value);
    }
  }

  /** Grows the buffer by `n` bytes and returns them. */
  private reserve(n: number): Buffer {
    if (this.length + n > this.buffer.length) {
      const grown = Buffer.alloc(Math.max(this.buffer.length * 2, this.length + n));
      this.buffer.copy(grown, 0, 0, this.length);
      this.buffer = grown;
    }
    const slice = this.buffer.subarray(this.length, this.length + n);
    this.length += n;
    return slice;
  }
}

function writeNumber(target: Buffer, code: string, value: number): void {
  if (code === 'y') target.writeUInt8(value);
  else if (code === 'n') target.writeInt16LE(value);
  else if (code === 'q') target.writeUInt16LE(value);
  else if (code === 'i') target.writeInt32LE(value);
  else if (code === 'd') target.writeDoubleLE(value);
  else target.writeUInt32LE(value); // u, h
}

function isVariant(value: DBusValue): value is DBusVariant {
  return typeof value === 'object' && !Array.isArray(value) && 'signature' in value;
}

function expectArray(type: string, value: DBusValue): readonly DBusValue[] {
  if (!Array.isArray(value)) throw new DBusWireError(`type ${type} needs an array`);
  return value as readonly DBusValue[];
}

/** Reads marshalled values from a message's bytes. */
export class WireReader {
  private at: number;

  constructor(
    private readonly buffer: Buffer,
    private readonly littleEndian: boolean,
    start = 0,
  ) {
    this.at = start;
  }

  get offset(): number {
    return this.at;
  }

  align(alignment: number): void {
    this.at += (alignment - (this.at % alignment)) % alignment;
  }

  /** Reads the values of `signature`. */
  readAll(signature: string): DBusValue[] {
    return splitSignature(signature).map((type) => this.read(type));
  }

  /** Reads one value of the complete type `type`. */
  read(type: string): DBusValue {
    const code = type[0] ?? '';
    this.align(alignmentOf(code));
    if (code === 'a') return this.readArray(type.slice(1));
    if (code === '(' || code === '{') return this.readAll(type.slice(1, -1));
    if (code === 'v') {
      const signature = this.readString('g');
      return { signature, value: this.read(signature) };
    }
    if (code === 's' || code === 'o' || code === 'g') return this.readString(code);
    return this.readFixed(code);
  }

  readUint32(): number {
    this.need(4);
    const value = this.littleEndian ? this.buffer.readUInt32LE(this.at) : this.buffer.readUInt32BE(this.at);
    this.at += 4;
    return value;
  }

  private readArray(element: string): DBusValue[] {
    const length = this.readUint32();
    this.align(alignmentOf(element[0] ?? ''));
    const end = this.at + length;
    if (end > this.buffer.length) throw new DBusWireError('array runs past the message');
    const items: DBusValue[] = [];
    while (this.at < end) items.push(this.read(element));
    return items;
  }

  private readString(code: string): string {
    const length = code === 'g' ? this.readByte() : this.readUint32();
    this.need(length + 1);
    const text = this.buffer.toString('utf8', this.at, this.at + length);
    this.at += length + 1;
    return text;
  }

  private readByte(): number {
    this.need(1);
    const value = this.buffer.readUInt8(this.at);
    this.at += 1;
    return value;
  }

  private readFixed(code: string): DBusValue {
    const size = alignmentOf(code);
    this.need(size);
    const value = readNumber(this.buffer, code, this.at, this.littleEndian);
    this.at += size;
    return code === 'b' ? value === 1 : value;
  }

  private need(n: number): void {
    if (this.at + n > this.buffer.length) throw new DBusWireError('value runs past the message');
  }
}

function readNumber(buffer: Buffer, code: string, at: number, le: boolean): number | bigint {
  switch (code) {
    case 'y': return buffer.readUInt8(at);
    case 'n': return le ? buffer.readInt16LE(at) : buffer.readInt16BE(at);
    case 'q': return le ? buffer.readUInt16LE(at) : buffer.readUInt16BE(at);
    case 'i': return le ? buffer.readInt32LE(at) : buffer.readInt32BE(at);
    case 'x': return le ? buffer.readBigInt64LE(at) : buffer.readBigInt64BE(at);
    case 't': return le ? buffer.readBigUInt64LE(at) : buffer.readBigUInt64BE(at);
    case 'd': return le ? buffer.readDoubleLE(at) : buffer.readDoubleBE(at);
    default: return le ? buffer.readUInt32LE(at) : buffer.readUInt32BE(at); // b, u, h
  }
}
