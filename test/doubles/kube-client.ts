/**
 * API clients for tests: one that must never be called (components whose API calls go through
 * fakes), and one from a kubeconfig file of the test cluster.
 */
import { connectKube, KubeClient } from '../../kube/client.js';
import { KubeTransport } from '../../kube/transport.js';

/** A client whose every request fails to connect: for components given fakes for each API call. */
export function unusedKubeClient(): KubeClient {
  return new KubeClient(new KubeTransport({ server: 'https://127.0.0.1:1', insecureSkipTlsVerify: false }));
}

/** A client with the credentials of a kubeconfig file (the test cluster's admin one by default). */
export function kubeClientFrom(file: string | undefined = process.env.KUBECONFIG): KubeClient {
  if (file === undefined || file === '') throw new Error('no kubeconfig: KUBECONFIG is not set');
  return connectKube(file);
}
