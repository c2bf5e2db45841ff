/**
 * D-Bus messages: the header's fixed part and fields, encoded and decoded (the specification's
 * "Message Format"). A stream of them is split by {@link messageLength}, which needs only the
 * first 16 bytes.
 */
import { DBusWireError, WireReader, WireWriter, type DBusValue } from './wire.js';

export const MessageType = { methodCall: 1, methodReturn: 2, error: 3, signal: 4 } as const;
export type MessageType = (typeof MessageType)[keyof typeof MessageType];

/** Header flag: the caller wants no reply. */
export const NO_REPLY_EXPECTED = 0x1;

/** One message, header fields by name. */
export interface DBusMessage {
  readonly type: MessageType;
  readonly flags?: number;
  readonly serial: number;
  readonly path?: string;
  readonly interface?: string;
  readonly member?: string;
  readonly errorName?: string;
  readonly replySerial?: number;
  readonly destination?: string;
  readonly sender?: string;
  /** The body's signature; empty for no body. */
  readonly signature: string;
  readonly body: readonly DBusValue[];
  /** How many file descriptors travel with the message (header field UNIX_FDS). */
  readonly unixFds?: number;
}

/** Header field codes and the type each carries. */
const FIELDS = [
  { code: 1, key: 'path', type: 'o' },
  { code: 2, key: 'interface', type: 's' },
  { code: 3, key: 'member', type: 's' },
  { code: 4, key: 'errorName', type: 's' },
  { code: 5, key: 'replySerial', type: 'u' },
  { code: 6, key: 'destination', type: 's' },
  { code: 7, key: 'sender', type: 's' },
  { code: 8, key: 'signature', type: 'g' },
  { code: 9, key: 'unixFds', type: 'u' },
] as const;

const PROTOCOL_VERSION = 1;
/** The specification's limit on a whole message. */
const MAX_MESSAGE_BYTES = 128 * 1024 * 1024;

/** The message's bytes, little-endian. */
export function encodeMessage(message: DBusMessage): Buffer {
  const body = new WireWriter();
  body.writeAll(message.signature, message.body);
  const head = new WireWriter();
  head.writeAll('yyyyuu', [0x6c /* 'l' */, message.type, message.flags ?? 0, PROTOCOL_VERSION, body.offset, message.serial]);
  const fields: DBusValue[] = [];
  for (const field of FIELDS) {
    const value = message[field.key];
    if (value === undefined || (field.key === 'signature' && value === '')) continue;
    fields.push([field.code, { signature: field.type, value }]);
  }
  head.write('a(yv)', fields);
  head.align(8);
  return Buffer.concat([head.bytes(), body.bytes()]);
}

function littleEndianOf(bytes: Buffer): boolean {
  const mark = bytes[0];
  if (mark !== 0x6c && mark !== 0x42) throw new DBusWireError(`not a D-Bus message (endianness byte ${String(mark)})`);
  return mark === 0x6c;
}

/**
 * The length of the message at the start of `bytes`, or undefined while fewer than 16 bytes are there.
 * @throws DBusWireError when the bytes cannot start a message.
 */
export function messageLength(bytes: Buffer): number | undefined {
  if (bytes.length < 16) return undefined;
  const reader = new WireReader(bytes, littleEndianOf(bytes), 4);
  const bodyLength = reader.readUint32();
  reader.readUint32(); // serial
  const fieldsLength = reader.readUint32();
  const headerEnd = 16 + fieldsLength + ((8 - ((16 + fieldsLength) % 8)) % 8);
  const total = headerEnd + bodyLength;
  if (total > MAX_MESSAGE_BYTES) throw new DBusWireError(`message of ${total} bytes is over the limit`);
  return total;
}

type Fields = Partial<Record<(typeof FIELDS)[number]['key'], string | number>>;

function headerFields(entries: readonly DBusValue[]): Fields {
  const fields: Fields = {};
  for (const entry of entries) {
    const [code, variant] = entry as readonly DBusValue[];
    const field = FIELDS.find((f) => f.code === code);
    if (field === undefined || typeof variant !== 'object' || Array.isArray(variant) || !('value' in variant)) continue;
    const value = variant.value;
    if (typeof value === 'string' || typeof value === 'number') fields[field.key] = value;
  }
  return fields;
}

/** Decodes one whole message (exactly {@link messageLength} bytes). @throws DBusWireError */
export function decodeMessage(bytes: Buffer): DBusMessage {
  const littleEndian = littleEndianOf(bytes);
  const reader = new WireReader(bytes, littleEndian);
  const [, type, flags, version, , serial, rawFields] = reader.readAll('yyyyuua(yv)');
  if (version !== PROTOCOL_VERSION) throw new DBusWireError(`unsupported D-Bus protocol version ${typeof version === 'number' ? version : '?'}`);
  const fields = headerFields(rawFields as readonly DBusValue[]);
  reader.align(8);
  const signature = typeof fields.signature === 'string' ? fields.signature : '';
  const body = reader.readAll(signature);
  return { ...(fields as Omit<DBusMessage, 'type' | 'serial' | 'signature' | 'body'>), type: type as MessageType, flags: flags as number, serial: serial as number, signature, body };
}
