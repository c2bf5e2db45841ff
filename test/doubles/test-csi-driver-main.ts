/**
 * The test CSI driver as a process, as a node plugin's DaemonSet would run it beside a
 * node-driver-registrar: `node --import tsx test/doubles/test-csi-driver-main.ts <driver-name> <agent-root> <data-dir>`
 * serves the driver on `<agent-root>/plugins/<driver-name>/csi.sock` (real bind mounts, so run it
 * as root in the agent's mount namespace) and announces it on
 * `<agent-root>/plugins_registry/<driver-name>-reg.sock`; SIGTERM removes both sockets.
 */
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { TestRegistrationSocket } from './test-device-plugin.js';
import { TestCsiDriver } from './test-csi-driver.js';

const [name = 'test.csi.nodelet.dev', agentRoot = '/var/lib/nodelet', dataDir = '/tmp/nodelet-test-csi'] = process.argv.slice(2);
const socketPath = path.join(agentRoot, 'plugins', name, 'csi.sock');
const registrationPath = path.join(agentRoot, 'plugins_registry', `${name}-reg.sock`);
mkdirSync(path.dirname(socketPath), { recursive: true });
mkdirSync(path.dirname(registrationPath), { recursive: true });
mkdirSync(dataDir, { recursive: true });
const driver = new TestCsiDriver({ name, socketPath, dataDir, nodeId: `${name}-node`, topology: { 'topology.test.csi.nodelet.dev/node': 'local' }, maxVolumesPerNode: 16, capabilities: ['STAGE_UNSTAGE_VOLUME'], mount: true });
const registration = new TestRegistrationSocket(registrationPath, { type: 'CSIPlugin', name, endpoint: socketPath, supportedVersions: ['1.0.0'] });
rmSync(registrationPath, { force: true });
await driver.start();
await registration.start();
process.stdout.write(`test CSI driver ${name} on ${socketPath}, registered through ${registrationPath}\n`);
process.once('SIGTERM', () => {
  registration.stop();
  driver.stop();
  rmSync(registrationPath, { force: true });
  rmSync(socketPath, { force: true });
  process.exit(0);
});
