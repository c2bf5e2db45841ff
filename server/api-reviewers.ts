/**
 * The node server's questions to the API server, with the node's own credentials: TokenReview
 * (who holds this bearer token?) and SubjectAccessReview (may this user do this to this node?).
 * The Node authorizer allows a node both creates (its NodeRules); the chart's ServiceAccount has
 * them in its ClusterRole.
 */
import { AuthenticationV1Api, AuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { TokenReviewer, UserInfo } from './authn.js';
import type { AccessReviewer, NodeAccess } from './authz.js';

/** TokenReview through `kubeConfig`. */
export function apiTokenReviewer(kubeConfig: KubeConfig): TokenReviewer {
  const api = kubeConfig.makeApiClient(AuthenticationV1Api);
  return {
    async review(token: string): Promise<UserInfo | undefined> {
      const review = await api.createTokenReview({ body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } } });
      const status = review.status;
      const name = status?.user?.username ?? '';
      if (status?.authenticated !== true || name === '') return undefined;
      const user = status.user;
      return { name, groups: user?.groups ?? [], ...(user?.uid === undefined ? {} : { uid: user.uid }), ...(user?.extra === undefined ? {} : { extra: user.extra }) };
    },
  };
}

/** SubjectAccessReview through `kubeConfig`, for `nodes/<subresource>` in the core group, v1. */
export function apiAccessReviewer(kubeConfig: KubeConfig): AccessReviewer {
  const api = kubeConfig.makeApiClient(AuthorizationV1Api);
  return {
    async allowed(access: NodeAccess): Promise<boolean> {
      const { user } = access;
      const review = await api.createSubjectAccessReview({
        body: {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          spec: {
            user: user.name,
            groups: [...user.groups],
            ...(user.uid === undefined ? {} : { uid: user.uid }),
            ...(user.extra === undefined ? {} : { extra: Object.fromEntries(Object.entries(user.extra).map(([k, v]) => [k, [...v]])) }),
            resourceAttributes: { verb: access.verb, group: '', version: 'v1', resource: 'nodes', subresource: access.subresource, name: access.node },
          },
        },
      });
      return review.status?.allowed === true;
    },
  };
}
