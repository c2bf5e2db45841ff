import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeMessage, encodeMessage, messageLength, MessageType } from './message.js';
import { DBusWireError, splitSignature, WireReader, WireWriter } from './wire.js';

describe('D-Bus wire format', () => {
  it('splits signatures into complete types', () => {
    assert.deepEqual(splitSignature('sa{sv}(ibt)ayh'), ['s', 'a{sv}', '(ibt)', 'ay', 'h']);
    assert.throws(() => splitSignature('a('), DBusWireError);
    assert.throws(() => splitSignature('z'), DBusWireError);
  });

  it('aligns each value to its own size, an empty array included', () => {
    const writer = new WireWriter();
    writer.writeAll('yat', [1, []]);
    // y at 0, padding to 4, the array length 0 at 4, padding to 8 for the (absent) first uint64.
    assert.deepEqual([...writer.bytes()], [1, 0, 0, 0, 0, 0, 0, 0]);
  });

  it('round-trips every type through a message', () => {
    const body = ['name', [['k', { signature: 'u', value: 7 }], ['b', { signature: 'as', value: ['x', 'y'] }]], [-3, true, 2n ** 63n], [1, 2, 255], 0, -1.5, -(2n ** 40n), 65535, '/org/x', 'a(ss)'];
    const message = { type: MessageType.methodCall, serial: 9, path: '/org/freedesktop/login1', interface: 'i.f', member: 'M', destination: 'org.d', signature: 'sa{sv}(ibt)ayhdxqog', body, unixFds: 1 };
    const bytes = encodeMessage(message);
    assert.equal(messageLength(bytes.subarray(0, 16)), bytes.length);
    assert.equal(messageLength(bytes.subarray(0, 15)), undefined);
    const decoded = decodeMessage(bytes);
    assert.deepEqual({ ...decoded, flags: undefined }, { ...message, flags: undefined });
  });

  it('reads big-endian messages', () => {
    // A signal `b` true, serial 1, from a big-endian peer: fields path, interface, member, signature.
    const writer = new WireWriter();
    writer.writeAll('yyyyuua(yv)', [0x42, MessageType.signal, 0, 1, 4, 1, [[1, { signature: 'o', value: '/a' }], [2, { signature: 's', value: 'i.x' }], [3, { signature: 's', value: 'S' }], [8, { signature: 'g', value: 'b' }]]]);
    writer.align(8);
    writer.write('b', true);
    const little = Buffer.from(writer.bytes());
    const big = toBigEndian(little);
    const decoded = decodeMessage(big);
    assert.deepEqual([decoded.type, decoded.serial, decoded.path, decoded.interface, decoded.member, decoded.body], [MessageType.signal, 1, '/a', 'i.x', 'S', [true]]);
  });
});

/** The same message re-encoded big-endian (only the uint32 fields this test uses). */
function toBigEndian(little: Buffer): Buffer {
  const big = Buffer.from(little);
  big[0] = 0x42;
  for (const at of [4, 8, 12]) big.writeUInt32BE(little.readUInt32LE(at), at);
  // Each header field's string length (after its signature byte), and the body's boolean.
  const reader = new WireReader(little, true, 16);
  const end = 16 + little.readUInt32LE(12);
  while (reader.offset < end) {
    reader.align(8);
    const start = reader.offset;
    reader.read('(yv)');
    const code = little[start] ?? 0;
    if (code !== 8) {
      const lengthAt = start + 4;
      big.writeUInt32BE(little.readUInt32LE(lengthAt), lengthAt);
    }
  }
  const bodyAt = little.length - 4;
  big.writeUInt32BE(little.readUInt32LE(bodyAt), bodyAt);
  return big;
}
