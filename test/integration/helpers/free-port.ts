/** A loopback TCP port for a server a test starts itself. */
import { createServer } from 'node:net';

/** A loopback TCP port free at the moment of asking (the kernel's pick). */
export async function freeLoopbackPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new TypeError('no TCP address');
  return address.port;
}
