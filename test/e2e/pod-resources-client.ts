/** A pod resources API v1 client for tests: `List` on the agent's socket, as a monitoring agent calls it. */
import { Client, credentials, Metadata } from '@grpc/grpc-js';
import { pluginMethod } from '../../controllers/plugins/proto.js';

export function listPodResources(socket: string): Promise<unknown> {
  const client = new Client(`unix://${socket}`, credentials.createInsecure());
  const method = pluginMethod('podresources', 'v1.PodResourcesLister', 'List');
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(method.path, method.requestSerialize, method.responseDeserialize, {}, new Metadata(), { deadline: Date.now() + 10_000 }, (error, value) => {
      client.close();
      if (error === null) resolve(value);
      else reject(error);
    });
  });
}
